package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// The e2e harness: every test starts the agent under test with startAgent
// and reads its self-metrics through the handle it returns. The
// configuration is an agentConfig (agentconfig_test.go); a fault in front
// of a receiver is an internal/faultproxy Proxy; the shared helpers are in
// helpers_test.go.

// agentOptions says how to run an agent under test.
type agentOptions struct {
	// binary runs the kube-state-push binary (built once, buildAgent) at
	// debug level with --web.enable-lifecycle, instead of an agent in the
	// test's process.
	binary bool
	// config is the configuration. A binary's listen_address is set to a
	// free port of its own.
	config *agentConfig
	// configText, when set, is written instead of config, as is but for
	// listenPlaceholder, replaced by the binary's address: for tests of
	// exact YAML.
	configText string
	// env is added to the binary's environment.
	env []string
	// flags are added to the binary's command line.
	flags []string
	// waitReady makes startAgent return only once the agent is ready.
	waitReady bool
	// ctx is an in-process agent's Run context (it may carry a klog
	// logger); context.Background() when nil.
	ctx context.Context
	// options are an in-process agent's; its Registry and ConfigFile are
	// set unless given, and its Logger writes to the handle's logs unless
	// given.
	options agent.Options
}

// listenPlaceholder stands for a binary's listen address in a configText.
const listenPlaceholder = "LISTEN_ADDRESS"

// testAgent is an agent under test: in-process or a binary, until the test
// ends.
type testAgent struct {
	opts agentOptions
	// configPath is the configuration file, which writeConfig replaces
	// before a reload or restart.
	configPath string
	// logs holds everything the agent logged.
	logs *syncBuffer

	// In process: the agent, its registry, and stop, which cancels Run and
	// waits for it (later calls return the first result).
	agent  *agent.Agent
	reg    *prometheus.Registry
	stopFn func() error

	// A binary: its listen address, the process, done (closed when it has
	// exited) and err (then how).
	listen string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
}

// startAgent runs an agent under test by opts until the test ends.
func startAgent(t *testing.T, opts agentOptions) *testAgent {
	t.Helper()
	a := &testAgent{opts: opts, configPath: filepath.Join(t.TempDir(), "config.yaml"), logs: &syncBuffer{}}
	if opts.binary {
		port, err := testenv.FreePort()
		require.NoError(t, err)
		a.listen = fmt.Sprintf("127.0.0.1:%d", port)
		if opts.config != nil {
			opts.config.ListenAddress = ptr.To(a.listen)
		}
	}
	text := opts.configText
	if text == "" {
		require.NotNil(t, opts.config, "an agent needs a config or a configText")
		text = opts.config.yamlText(t)
	}
	a.writeConfig(t, text)
	t.Cleanup(func() {
		if a.opts.binary {
			a.kill()
		} else {
			_ = a.stop()
		}
		a.keepLog(t)
	})
	a.start(t)
	return a
}

// start runs the agent on its configuration file.
func (a *testAgent) start(t *testing.T) {
	t.Helper()
	if !a.opts.binary {
		a.runInProcess(t)
	} else {
		a.runBinary(t)
	}
	if a.opts.waitReady {
		a.waitReady(t)
	}
}

// runBinary starts the binary on the configuration file.
func (a *testAgent) runBinary(t *testing.T) {
	t.Helper()
	args := append([]string{"--config.file=" + a.configPath, "--log.level=debug", "--web.enable-lifecycle"}, a.opts.flags...)
	a.cmd = exec.Command(buildAgent(t), args...)
	a.cmd.Env = append(os.Environ(), a.opts.env...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, a.cmd.Start())
	done := make(chan struct{})
	a.done, a.err = done, nil
	go func() {
		err := a.cmd.Wait()
		a.err = err
		close(done)
	}()
}

// waitReady waits until the agent is ready: a binary's /readyz answers 200.
func (a *testAgent) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, "the agent ready", func() error {
		if !a.opts.binary {
			if !a.agent.Ready() {
				return fmt.Errorf("not ready")
			}
			return nil
		}
		if a.exited() {
			t.Fatalf("the agent exited (%v):\n%s", a.err, a.logs)
		}
		return httpStatus(a.url("/readyz"), http.StatusOK)
	})
}

// url is the URL of path on the agent's listen_address.
func (a *testAgent) url(path string) string {
	if a.opts.binary {
		return "http://" + a.listen + path
	}
	return "http://" + a.agent.Addr().String() + path
}

// pullURL is the URL of an in-process agent's pull page.
func (a *testAgent) pullURL() string {
	return "http://" + a.agent.PullAddr().String() + "/metrics"
}

// writeConfig replaces the configuration file (listenPlaceholder replaced
// by a binary's address), for a reload or restart.
func (a *testAgent) writeConfig(t *testing.T, text string) {
	t.Helper()
	text = strings.ReplaceAll(text, listenPlaceholder, a.listen)
	require.NoError(t, os.WriteFile(a.configPath, []byte(text), 0o600))
}

// reload makes the agent read its configuration file again: a binary by
// POST /-/reload, whose status and body it returns; an in-process agent by
// Reload (status 200, or the test fails).
func (a *testAgent) reload(t *testing.T) (int, string) {
	t.Helper()
	if !a.opts.binary {
		require.NoError(t, a.agent.Reload(a.context()))
		return http.StatusOK, ""
	}
	resp, err := http.Post(a.url("/-/reload"), "", nil) //nolint:noctx // test helper on loopback
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// page returns the agent's /metrics page.
func (a *testAgent) page(t *testing.T) string {
	t.Helper()
	body, err := httpGet(a.url("/metrics"))
	require.NoError(t, err)
	return body
}

// metrics reads the agent's self-metrics once: an in-process agent's
// registry, or a binary's /metrics page.
func (a *testAgent) metrics(t *testing.T) selfMetrics {
	t.Helper()
	if !a.opts.binary {
		mfs, err := a.reg.Gather()
		require.NoError(t, err, "gathering self-metrics")
		return selfMetrics(mfs)
	}
	m, err := parseMetrics(a.page(t))
	require.NoError(t, err)
	return m
}

// metric returns the sum of the samples of family name whose labels include
// every pair of labels; see selfMetrics.value.
func (a *testAgent) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return a.metrics(t).value(t, name, labels)
}

// waitDelivered waits until the agent is ready and has taken n snapshots,
// and the endpoint (labels) has sent samples.
func (a *testAgent) waitDelivered(t *testing.T, endpoint map[string]string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d snapshots delivered", n), func() error {
		m := a.metrics(t)
		taken := m.value(t, "kube_state_push_snapshot_total", nil)
		if sent := m.value(t, "kube_state_push_remote_samples_sent_total", endpoint); !a.ready() || sent == 0 || taken < float64(n) {
			return fmt.Errorf("%g snapshots, %g samples sent", taken, sent)
		}
		return nil
	})
}

// ready reports whether the agent is ready.
func (a *testAgent) ready() bool {
	if !a.opts.binary {
		return a.agent.Ready()
	}
	return httpStatus(a.url("/readyz"), http.StatusOK) == nil
}

// requireNothingDropped checks that the endpoint dropped no sample for any
// reason.
func (a *testAgent) requireNothingDropped(t *testing.T, endpoint string) {
	t.Helper()
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": endpoint}),
		"samples dropped by %s", endpoint)
}

// stop ends the agent as at a SIGTERM and returns how it ended: an
// in-process agent's Run error, or a binary's exit (within a minute).
func (a *testAgent) stop() error {
	if !a.opts.binary {
		if a.stopFn == nil {
			return nil
		}
		return a.stopFn()
	}
	if a.done == nil || a.exited() {
		return a.err
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-a.done:
		return a.err
	case <-time.After(time.Minute):
		a.kill()
		return fmt.Errorf("the agent did not stop within a minute")
	}
}

// kill ends a binary at once with SIGKILL, as the kernel's OOM killer or a
// node failure would, and waits for it.
func (a *testAgent) kill() {
	if a.done == nil || a.exited() {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.done
}

// signal sends sig to a binary.
func (a *testAgent) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, a.cmd.Process.Signal(sig))
}

// restart runs the agent again on its configuration file (and, for a
// binary, its flags) once it has ended, with a fresh registry.
func (a *testAgent) restart(t *testing.T) {
	t.Helper()
	require.True(t, a.opts.binary && a.exited() || !a.opts.binary, "restart after the agent ended")
	if !a.opts.binary {
		_ = a.stop()
		a.opts.options.Registry = nil
	}
	a.start(t)
}

// exited reports whether a binary has exited.
func (a *testAgent) exited() bool {
	if a.done == nil {
		return false
	}
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func (a *testAgent) context() context.Context {
	if a.opts.ctx != nil {
		return a.opts.ctx
	}
	return context.Background()
}

// keepLog writes the agent's whole log, when the test failed, beside the
// logs run keeps for a failed run (env.dir), and says where; the last
// keptLogLines lines go into the test's output too.
func (a *testAgent) keepLog(t *testing.T) {
	t.Helper()
	if !t.Failed() || env.dir == "" || a.logs.String() == "" {
		return
	}
	// A test may run several agents: each gets a file of its own.
	f, err := os.CreateTemp(env.dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-agent-*.log")
	if err == nil {
		_, err = f.WriteString(a.logs.String())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Logf("keeping the agent's log: %v", err)
		return
	}
	// CI may show only the test's output: the end of the log goes there.
	lines := strings.Split(strings.TrimRight(a.logs.String(), "\n"), "\n")
	t.Logf("the agent's log: %s; its last lines:\n%s", f.Name(), strings.Join(lines[max(0, len(lines)-keptLogLines):], "\n"))
}

// keptLogLines is how many of a failed test's agent's last log lines go
// into the test's output.
const keptLogLines = 40

// selfMetrics is one reading of an agent's self-metrics.
type selfMetrics []*dto.MetricFamily

// parseMetrics reads a /metrics page.
func parseMetrics(text string) (selfMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing self-metrics: %w", err)
	}
	out := make(selfMetrics, 0, len(byName))
	for _, mf := range byName {
		out = append(out, mf)
	}
	return out, nil
}

// sum returns the sum of the counters or gauges of family name whose labels
// include every pair of labels (none: all of them). A family that is not
// there is an error.
func (m selfMetrics) sum(name string, labels map[string]string) (float64, error) {
	for _, mf := range m {
		if mf.GetName() != name {
			continue
		}
		sum := 0.0
		for _, s := range mf.GetMetric() {
			if !hasLabels(s, labels) {
				continue
			}
			switch {
			case s.Counter != nil:
				sum += s.GetCounter().GetValue()
			case s.Gauge != nil:
				sum += s.GetGauge().GetValue()
			case s.Untyped != nil:
				sum += s.GetUntyped().GetValue()
			default:
				return 0, fmt.Errorf("%s is neither a counter nor a gauge", name)
			}
		}
		return sum, nil
	}
	return 0, fmt.Errorf("no self-metric %s", name)
}

// value is sum, failing the test on an error.
func (m selfMetrics) value(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := m.sum(name, labels)
	require.NoError(t, err)
	return v
}

// present is value for series that must be there: at least one of family
// name has every pair of labels.
func (m selfMetrics) present(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	found := false
	for _, mf := range m {
		for _, s := range mf.GetMetric() {
			found = found || mf.GetName() == name && hasLabels(s, labels)
		}
	}
	require.True(t, found, "no %s%v in the agent's metrics", name, labels)
	return m.value(t, name, labels)
}

// single returns the value of family name, which must have one series.
func (m selfMetrics) single(t *testing.T, name string) float64 {
	t.Helper()
	for _, mf := range m {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1, name)
			v, err := m.sum(name, nil)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	// mu guards b.
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProxy starts a fault proxy in front of the write URL target, by
// rules, until the test ends.
func startProxy(t *testing.T, target string, rules ...faultproxy.Rule) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target, rules...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// forwardedSamples counts the samples of the requests the proxy forwarded
// and the target answered with a status ok accepts, by series (labelKey)
// and timestamp, each as often as it was in such a request, staleness
// markers included.
func forwardedSamples(recs []faultproxy.Record, ok func(status int) bool) map[string]map[int64]int {
	out := map[string]map[int64]int{}
	for _, r := range recs {
		if r.Outcome != faultproxy.Forwarded || r.Write == nil || !ok(r.Status) {
			continue
		}
		for _, ts := range r.Write.Timeseries {
			k := promLabelKey(ts.Labels)
			for _, s := range ts.Samples {
				if out[k] == nil {
					out[k] = map[int64]int{}
				}
				out[k][s.Timestamp]++
			}
		}
	}
	return out
}

// anyStatus and accepted are statuses for forwardedSamples.
func anyStatus(int) bool { return true }

func accepted(status int) bool { return status/100 == 2 }
