package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Namespace is a network and mount namespace of the test's own, held open
// by a process (unshare ... sleep). Programs run in it through nsenter, so
// each stays an ordinary child of the test with its own log; the test
// itself stays in the host's namespaces and reaches servers in this one
// through Forward, which dials from a thread moved into the namespace.
//
// unshare, not ip netns exec: the latter remounts /sys and leaves
// /sys/fs/cgroup empty, which the kubelet cannot run without.
type Namespace struct {
	holder *Process
	// netFile is the namespace's network namespace, open for DialContext,
	// which uses its descriptor netFD.
	netFile *os.File
	netFD   int

	// mu guards listeners.
	mu        sync.Mutex
	listeners []net.Listener
}

// NewNamespace starts the holder process in dir: a new network namespace
// with only lo, up, and a new mount namespace whose mounts are shared among
// themselves but not with the host's (made private, then shared again, so
// that nothing mounted inside reaches the host).
func NewNamespace(ctx context.Context, dir string) (*Namespace, error) {
	for _, b := range []string{"unshare", "nsenter", "mount", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("%s not found: the node's namespace needs util-linux and iproute2", b)
		}
	}
	holder, err := Start(dir, "namespace", "unshare", "--net", "--mount", "--propagation", "private", "sleep", "infinity")
	if err != nil {
		return nil, err
	}
	ns := &Namespace{holder: holder}
	ok := false
	defer func() {
		if !ok {
			ns.Close()
		}
	}()
	// unshare execs sleep once the namespaces exist: wait until the
	// holder's network namespace is no longer ours.
	if err := holder.waitReady(ctx, func(context.Context) error {
		mine, err1 := os.Readlink("/proc/self/ns/net")
		its, err2 := os.Readlink("/proc/" + strconv.Itoa(holder.Pid()) + "/ns/net")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if mine == its {
			return errors.New("namespace not created yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if ns.netFile, err = os.Open(ns.path("net")); err != nil {
		return nil, fmt.Errorf("opening the node's network namespace: %w", err)
	}
	ns.netFD = int(ns.netFile.Fd())
	for _, c := range [][]string{
		{"mount", "--make-rshared", "/"},
		{"ip", "link", "set", "lo", "up"},
	} {
		if _, err := ns.Run(ctx, c[0], c[1:]...); err != nil {
			return nil, err
		}
	}
	ok = true
	return ns, nil
}

func (ns *Namespace) path(kind string) string {
	return "/proc/" + strconv.Itoa(ns.holder.Pid()) + "/ns/" + kind
}

// Pid is the holder process' id: /proc/<Pid>/ns/{net,mnt} are the
// namespaces.
func (ns *Namespace) Pid() int { return ns.holder.Pid() }

// Command returns a command running bin with args inside the namespace.
func (ns *Namespace) Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", ns.nsenterArgs(bin, args)...)
}

func (ns *Namespace) nsenterArgs(bin string, args []string) []string {
	return append([]string{"--net=" + ns.path("net"), "--mount=" + ns.path("mnt"), "--", bin}, args...)
}

// Run runs bin with args inside the namespace and returns its output; an
// error carries the output.
func (ns *Namespace) Run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	out, err := ns.Command(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %v in the node's namespace: %w: %s", bin, args, err, out)
	}
	return out, nil
}

// Start is Start for a program inside the namespace. nsenter execs it, so
// the Process is the program itself: Stop signals it directly.
func (ns *Namespace) Start(dir, name, bin string, args ...string) (*Process, error) {
	return Start(dir, name, "nsenter", ns.nsenterArgs(bin, args)...)
}

// DialContext dials addr from inside the namespace. The socket is made on
// a thread moved into the namespace for the call and keeps that namespace
// after the thread moves back.
func (ns *Namespace) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread is unlocked only when it is back in the test's own
		// namespace; otherwise it ends with this goroutine.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{err: fmt.Errorf("opening this thread's network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Setns(ns.netFD, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("entering the node's network namespace: %w", err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Forward listens on 127.0.0.1 in the test's namespace and relays every
// connection to addr inside this one. It returns the local address
// (host:port); the listener closes with the namespace.
func (ns *Namespace) Forward(addr string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening to forward %s: %w", addr, err)
	}
	ns.mu.Lock()
	ns.listeners = append(ns.listeners, l)
	ns.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go ns.relay(c, addr)
		}
	}()
	return l.Addr().String(), nil
}

func (ns *Namespace) relay(c net.Conn, addr string) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := ns.DialContext(ctx, "tcp", addr)
	cancel()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// Close stops forwarding and ends the holder process. The namespaces go
// when the last process in them has ended (Node.Stop sees to that), and
// their mounts with them.
func (ns *Namespace) Close() {
	ns.mu.Lock()
	for _, l := range ns.listeners {
		_ = l.Close()
	}
	ns.listeners = nil
	ns.mu.Unlock()
	if ns.netFile != nil {
		_ = ns.netFile.Close()
	}
	ns.holder.Kill()
}

// inNamespace reports whether process pid is in the namespace's mount
// namespace.
func (ns *Namespace) inNamespace(pid int) bool {
	want, err1 := os.Readlink(ns.path("mnt"))
	got, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	return err1 == nil && err2 == nil && want == got
}
