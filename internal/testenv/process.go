package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// BinDir returns the folder holding the built tools: $KSP_TOOLS_BIN, else
// .tools/bin at the repository root.
func BinDir() string {
	if d := os.Getenv("KSP_TOOLS_BIN"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".tools", "bin")
}

// Binary returns the path of a built tool, or an error saying how to build
// it.
func Binary(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run scripts/build-tools.sh (make tools) first", name, BinDir())
	}
	return p, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is a started program whose output goes to a log file.
type Process struct {
	// Name is the program's short name, for messages.
	Name string
	// Log is the path of the file holding its stdout and stderr.
	Log string
	cmd *exec.Cmd
	// done is closed when the process has exited.
	done chan struct{}
	err  error
}

// Start runs bin with args, logging to dir/name.log.
func Start(dir, name, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process' id, for reading /proc/<pid>.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (nil for exit status 0); valid once it has
// exited.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Stop sends SIGTERM, then SIGKILL after the timeout, and waits.
func (p *Process) Stop(timeout time.Duration) {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process at once with SIGKILL and waits.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Tail returns the last bytes of the process' log, for error messages.
func (p *Process) Tail() string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitReady polls check until it succeeds, the process exits, or ctx ends.
func (p *Process) waitReady(ctx context.Context, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%w); log %s:\n%s", p.Name, p.err, p.Log, p.Tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %w); log %s:\n%s", p.Name, ctx.Err(), last, p.Log, p.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpOK returns a check that GETs url and wants a 200.
func httpOK(c *http.Client, url string, header http.Header) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(url + " answered " + strconv.Itoa(resp.StatusCode))
		}
		return nil
	}
}
