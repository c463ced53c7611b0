package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// restartInterval is the snapshot interval of the restart test.
const restartInterval = time.Second

// The agent binary with a disk buffer, SIGKILLed while its requests are in
// flight to a slow receiver, then restarted on the same directory: every
// sample it queued reaches Prometheus, only the batch each shard had in
// flight is sent again, and a receiver outage afterwards is buffered on disk
// (its size measured) and drained in order.
func TestRestartAfterSIGKILL(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildAgent(t)
	dir := t.TempDir()
	prom, err := testenv.StartPrometheus(ctx, dir)
	require.NoError(t, err)
	defer prom.Stop()
	proxy := newRestartProxy(t, prom.WriteURL())

	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "restart"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, ns)
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)
	defer func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()

	const shards, perSend = 2, 50
	bufDir := filepath.Join(dir, "buffer")
	port, err := testenv.FreePort()
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`kubeconfig: %s
resources: [nodes, pods]
namespaces: [%s]
snapshot_interval: %s
listen_address: 127.0.0.1:%d
external_labels: {run: restart}
shutdown_timeout: 20s
remote_write:
  - url: %s
    name: prom
    disk_buffer:
      directory: %s
    queue_config:
      min_shards: %d
      max_shards: %d
      max_samples_per_send: %d
      min_backoff: 30ms
      max_backoff: 300ms
      max_retry_duration: 2s
`, env.cp.Kubeconfig, ns, restartInterval, port, proxy.URL(), bufDir, shards, shards, perSend)), 0o600))
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	start := func(name string) *testenv.Process {
		p, err := testenv.Start(dir, name, bin, "--config.file="+cfgPath)
		require.NoError(t, err)
		eventually(t, 30*time.Second, name+" ready", func() error {
			return httpStatus(fmt.Sprintf("http://127.0.0.1:%d/readyz", port), 200)
		})
		return p
	}
	// ticksSeen waits until the receiver has n more ticks than now.
	ticksSeen := func(what string, n int) {
		t.Helper()
		before := proxy.ticks()
		eventually(t, time.Duration(n+10)*restartInterval, what, func() error {
			if got := proxy.ticks() - before; got < n {
				return fmt.Errorf("%d new ticks at the receiver", got)
			}
			return nil
		})
	}

	// Run 1, then a slow receiver: requests are held 1.5 s, so each shard
	// has one in flight and ticks pile up on disk; SIGKILL meanwhile.
	agent1 := start("agent-1")
	defer agent1.Kill()
	ticksSeen("run 1 pushing", 3)
	proxy.setMode(proxySlow)
	eventually(t, 10*time.Second, "requests held", func() error {
		if n := proxy.holding.Load(); n < shards {
			return fmt.Errorf("%d requests held", n)
		}
		return nil
	})
	eventually(t, 10*time.Second, "ticks queued on disk behind them", func() error {
		m, err := httpGet(metricsURL)
		if err != nil {
			return err
		}
		perTick := restartMetric(t, m, "kube_state_push_snapshot_samples", "")
		if q := restartMetric(t, m, "kube_state_push_remote_queue_length", `endpoint="prom"`); q < 2*perTick {
			return fmt.Errorf("%.0f samples queued, %.0f per snapshot", q, perTick)
		}
		return nil
	})
	agent1.Kill()
	killedAt := time.Now()
	proxy.setMode(proxyPass)
	eventually(t, 10*time.Second, "held requests forwarded", func() error {
		if n := proxy.holding.Load(); n > 0 {
			return fmt.Errorf("%d requests still held", n)
		}
		return nil
	})
	sentBeforeRestart := proxy.total()

	// Run 2 on the same directory.
	agent2 := start("agent-2")
	defer agent2.Kill()
	ticksSeen("run 2 pushing", 3)
	lateOld := proxy.samplesOlderThan(killedAt, sentBeforeRestart)
	require.Positive(t, lateOld, "the backlog queued before the kill was sent after the restart")

	// An outage of the receiver for 10 intervals: the agent keeps ticking
	// into the disk buffer.
	proxy.setMode(proxyDown)
	outageStart := time.Now()
	eventually(t, 30*time.Second, "an outage of 10 intervals", func() error {
		if d := time.Since(outageStart); d < 10*restartInterval {
			return fmt.Errorf("down for %s", d)
		}
		return nil
	})
	m, err := httpGet(metricsURL)
	require.NoError(t, err)
	bufBytes := restartMetric(t, m, "kube_state_push_remote_buffer_bytes", `endpoint="prom"`)
	bufSegs := restartMetric(t, m, "kube_state_push_remote_buffer_segments", `endpoint="prom"`)
	queued := restartMetric(t, m, "kube_state_push_remote_queue_length", `endpoint="prom"`)
	perTick := restartMetric(t, m, "kube_state_push_snapshot_samples", "")
	onDisk := dirSize(t, bufDir)
	outage := time.Since(outageStart)
	t.Logf("receiver down %.1fs (%d intervals of %s), %.0f samples per snapshot: %.0f samples buffered, "+
		"%.0f bytes in %.0f segments (%d bytes in the directory), %.1f bytes per sample",
		outage.Seconds(), int(outage/restartInterval), restartInterval, perTick, queued, bufBytes, bufSegs, onDisk, bufBytes/queued)
	require.GreaterOrEqual(t, queued, 9*perTick, "the outage's snapshots are buffered")
	require.Positive(t, bufBytes)
	require.GreaterOrEqual(t, onDisk, int64(bufBytes))
	require.Zero(t, restartMetric(t, m, `kube_state_push_remote_samples_dropped_total`, `reason="retries_ended"`), "kept, not dropped")

	proxy.setMode(proxyPass)
	eventually(t, 30*time.Second, "the outage's backlog drained", func() error {
		m, err := httpGet(metricsURL)
		if err != nil {
			return err
		}
		// One snapshot may be queued at any time.
		if q := restartMetric(t, m, "kube_state_push_remote_queue_length", `endpoint="prom"`); q > perTick {
			return fmt.Errorf("%.0f samples queued", q)
		}
		return nil
	})
	ticksSeen("run 2 after the outage", 2)
	m, err = httpGet(metricsURL)
	require.NoError(t, err)
	agent2.Stop(30 * time.Second)
	require.NoError(t, agent2.Err(), "exit 0 after SIGTERM; log:\n%s", agent2.Tail())

	// At most the snapshots in flight (the replayer keeps two handed to
	// the shards) were sent twice, and the agent counted those samples as
	// resent (or refused as resent).
	resent := restartMetric(t, m, "kube_state_push_remote_samples_resent_total", `endpoint="prom"`) +
		restartMetric(t, m, "kube_state_push_remote_samples_dropped_total", `reason="resent"`)
	dups := proxy.duplicates()
	t.Logf("samples sent twice: %d (counted by the agent as resent: %.0f; limit 2 snapshots of %.0f)", dups, resent, perTick)
	require.LessOrEqual(t, float64(dups), 2*perTick)
	require.LessOrEqual(t, float64(dups), resent)
	for _, r := range []string{"bad_request", "conflict", "buffer_full", "buffer_error", "shutdown", "retries_ended", "queue_full", "too_old"} {
		require.Zero(t, restartMetric(t, m, "kube_state_push_remote_samples_dropped_total", `reason="`+r+`"`), "dropped %s", r)
	}

	// No sample lost: every pod series of the namespace holds a sample for
	// every tick the receiver saw (the tick cut off by the kill may be
	// partial: only its part written before the kill was queued), and the
	// ticks are a second apart but for the agent's down time.
	series, err := prom.RawSamples(ctx, `{namespace="restart",run="restart"}`, 10*time.Minute)
	require.NoError(t, err)
	require.NotEmpty(t, series)
	all := map[int64]int{}
	for _, s := range series {
		for _, ts := range s.Timestamps {
			all[ts]++
		}
	}
	ticks := make([]int64, 0, len(all))
	for ts := range all {
		ticks = append(ticks, ts)
	}
	slices.Sort(ticks)
	partial := 0
	for _, ts := range ticks {
		if all[ts] != len(series) {
			partial++
			require.Less(t, ts, killedAt.UnixMilli(), "only the tick cut off by the kill may be partial")
		}
	}
	require.LessOrEqual(t, partial, 1)
	gaps := 0
	for i := 1; i < len(ticks); i++ {
		if d := time.Duration(ticks[i]-ticks[i-1]) * time.Millisecond; d > restartInterval*3/2 {
			gaps++
			require.Less(t, ticks[i-1], killedAt.UnixMilli(), "a gap only while the agent was down")
		}
	}
	require.LessOrEqual(t, gaps, 1)
	t.Logf("%d series, %d ticks stored, %d partial; %d requests forwarded; %d samples queued before the kill were sent after the restart",
		len(series), len(ticks), partial, proxy.total(), lateOld)
}

// Modes of the restart proxy.
const (
	proxyPass = iota // forward at once
	proxySlow        // hold each request 1.5 s, then forward it even if the client is gone
	proxyDown        // answer 503 without forwarding
)

// restartProxy forwards remote-write requests to Prometheus and records the
// samples it forwarded.
type restartProxy struct {
	srv    *httptest.Server
	target string
	// mode is proxyPass, proxySlow or proxyDown.
	mode atomic.Int32
	// holding counts the requests being held in proxySlow.
	holding atomic.Int32

	// mu guards seen and forwarded.
	mu sync.Mutex
	// seen counts each forwarded sample by series and timestamp.
	seen map[string]map[int64]int
	// forwarded lists what each forwarded request carried, in order.
	forwarded []restartForward
}

// restartForward is one forwarded request: when it arrived and the
// timestamps it carried.
type restartForward struct {
	at         time.Time
	timestamps []int64
}

func newRestartProxy(t *testing.T, target string) *restartProxy {
	t.Helper()
	p := &restartProxy{target: target, seen: map[string]map[int64]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.handle))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's write URL.
func (p *restartProxy) URL() string { return p.srv.URL + "/api/v1/write" }

func (p *restartProxy) setMode(m int32) { p.mode.Store(m) }

func (p *restartProxy) handle(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch p.mode.Load() {
	case proxyDown:
		http.Error(w, "receiver down", http.StatusServiceUnavailable)
		return
	case proxySlow:
		p.holding.Add(1)
		time.Sleep(1500 * time.Millisecond) // a slow receiver: the delay is the point
		p.holding.Add(-1)
	}
	// Forwarded even when the client has gone: a killed agent's last
	// request may still be stored.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	p.record(arrived, body)
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// record counts the samples of a forwarded request.
func (p *restartProxy) record(at time.Time, body []byte) {
	wr, err := encode.DecodeWriteRequest(body)
	if err != nil {
		return
	}
	f := restartForward{at: at}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ts := range wr.Timeseries {
		var key strings.Builder
		for _, l := range ts.Labels {
			key.WriteString(l.Name + "=" + l.Value + ",")
		}
		k := key.String()
		if p.seen[k] == nil {
			p.seen[k] = map[int64]int{}
		}
		for _, s := range ts.Samples {
			p.seen[k][s.Timestamp]++
			f.timestamps = append(f.timestamps, s.Timestamp)
		}
	}
	p.forwarded = append(p.forwarded, f)
}

// ticks returns the number of distinct timestamps forwarded.
func (p *restartProxy) ticks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := map[int64]bool{}
	for _, f := range p.forwarded {
		for _, ts := range f.timestamps {
			all[ts] = true
		}
	}
	return len(all)
}

// total returns the number of forwarded requests.
func (p *restartProxy) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.forwarded)
}

// samplesOlderThan counts the samples timestamped before t in the requests
// forwarded from the from-th on.
func (p *restartProxy) samplesOlderThan(t time.Time, from int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.forwarded[from:] {
		for _, ts := range f.timestamps {
			if ts < t.UnixMilli() {
				n++
			}
		}
	}
	return n
}

// duplicates returns how many samples were forwarded more than once
// (counting each extra time).
func (p *restartProxy) duplicates() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return extraCopies(p.seen)
}

// restartMetric returns the sum of the samples of family name in the
// exposition text whose labels contain match ("" for all).
func restartMetric(t *testing.T, text, name, match string) float64 {
	t.Helper()
	sum, found := 0.0, false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') || !strings.Contains(rest, match) {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		require.NoError(t, err, "line %q", line)
		sum, found = sum+v, true
	}
	require.True(t, found, "no %s{%s} in the agent's metrics", name, match)
	return sum
}

// dirSize returns the bytes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	}))
	return n
}

// extraCopies counts, over series and timestamps, the times a sample was
// seen beyond the first.
func extraCopies(seen map[string]map[int64]int) int {
	n := 0
	for _, byTS := range seen {
		for _, c := range byTS {
			n += c - 1
		}
	}
	return n
}
