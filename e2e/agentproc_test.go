package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// agentProcess is the kube-state-push binary run by a test, with its whole
// stdout and stderr kept, and the configuration file it reads, which the
// test may rewrite before a reload.
type agentProcess struct {
	// config is the configuration file's path; listen is the agent's
	// listen_address and base its URL.
	config, listen, base string
	cmd                  *exec.Cmd
	// out holds stdout and stderr (syncBuffer is rbac_test.go's).
	out *syncBuffer
	// done is closed when the process has exited; err is then how.
	done chan struct{}
	err  error
}

// listenPlaceholder stands for the agent's listen address in configuration
// texts given to startAgentProcess and writeConfig.
const listenPlaceholder = "LISTEN_ADDRESS"

// startAgentProcess writes the configuration (listenPlaceholder replaced by
// a free address) to a file and runs bin on it at debug level, with
// --web.enable-lifecycle for reload, until the test ends; it waits until
// /readyz answers 200.
func startAgentProcess(t *testing.T, bin, cfgText string) *agentProcess {
	t.Helper()
	port, err := testenv.FreePort()
	require.NoError(t, err)
	p := &agentProcess{
		config: filepath.Join(t.TempDir(), "config.yaml"),
		listen: fmt.Sprintf("127.0.0.1:%d", port),
		out:    &syncBuffer{},
		done:   make(chan struct{}),
	}
	p.base = "http://" + p.listen
	p.writeConfig(t, cfgText)
	p.cmd = exec.Command(bin, "--config.file="+p.config, "--log.level=debug", "--web.enable-lifecycle")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		p.keepLog(t)
	})
	eventually(t, 30*time.Second, "the agent's /readyz", func() error {
		if p.exited() {
			t.Fatalf("the agent exited (%v):\n%s", p.err, p.out)
		}
		return httpStatus(p.base+"/readyz", http.StatusOK)
	})
	return p
}

// keepLog writes the agent's whole output, when the test failed, beside the
// logs run keeps for a failed run (env.dir), and says where; the last
// keptLogLines lines go into the test's output too.
func (p *agentProcess) keepLog(t *testing.T) {
	t.Helper()
	if !t.Failed() || env.dir == "" {
		return
	}
	// A test may run several agents: each gets a file of its own.
	f, err := os.CreateTemp(env.dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-agent-*.log")
	if err == nil {
		_, err = f.WriteString(p.out.String())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Logf("keeping the agent's log: %v", err)
		return
	}
	// CI may show only the test's output: the end of the log goes there.
	lines := strings.Split(strings.TrimRight(p.out.String(), "\n"), "\n")
	t.Logf("the agent's log: %s; its last lines:\n%s", f.Name(), strings.Join(lines[max(0, len(lines)-keptLogLines):], "\n"))
}

// keptLogLines is how many of a failed test's agent's last log lines go
// into the test's output.
const keptLogLines = 40

// writeConfig replaces the configuration file (listenPlaceholder replaced
// by the agent's address).
func (p *agentProcess) writeConfig(t *testing.T, text string) {
	t.Helper()
	text = strings.ReplaceAll(text, listenPlaceholder, p.listen)
	require.NoError(t, os.WriteFile(p.config, []byte(text), 0o600))
}

// signal sends sig to the agent.
func (p *agentProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// reload POSTs /-/reload and returns the status and body.
func (p *agentProcess) reload(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Post(p.base+"/-/reload", "", nil) //nolint:noctx // test helper on loopback
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// metrics returns the agent's /metrics page.
func (p *agentProcess) metrics(t *testing.T) string {
	t.Helper()
	body, err := httpGet(p.base + "/metrics")
	require.NoError(t, err)
	return body
}

// stop sends SIGTERM and waits for the exit, which it returns.
func (p *agentProcess) stop(t *testing.T) error {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(time.Minute):
		p.kill()
		return fmt.Errorf("the agent did not stop within a minute")
	}
}

// kill ends the agent at once with SIGKILL, as the kernel's OOM killer or a
// node failure would, and waits for it.
func (p *agentProcess) kill() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *agentProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
