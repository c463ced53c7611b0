package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Settings of TestSIGKILLDuringReplay.
const (
	// replayOutage is how many snapshots (1 s apart) Prometheus is down.
	replayOutage = 15
	// replayPerSend is max_samples_per_send: a snapshot takes two
	// requests, so that the backlog's requests do not line up with its
	// snapshots.
	replayPerSend = 100
	// replayHold is how long the slow proxy holds each request of the
	// replay before forwarding it.
	replayHold = 400 * time.Millisecond
	// replayAheadFrames is how many snapshots the agent's replayer keeps
	// handed to the endpoint and not yet delivered (queue/feed.go
	// replayAhead): at most these are in flight at a kill.
	replayAheadFrames = 2
)

// The agent binary with a disk buffer, SIGKILLed while it replays the
// backlog of a Prometheus outage through a slow proxy (whose requests in
// flight at the kill are still forwarded and stored), then started again on
// the same configuration and buffer until its queue is empty, then stopped
// with SIGTERM: every snapshot either process took is stored in full, the
// only samples dropped are refused resends, and the second process resends
// no more than the snapshots in flight at the kill.
func TestSIGKILLDuringReplay(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildAgent(t)
	dir := t.TempDir()
	prom, err := testenv.StartPrometheus(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(prom.Stop)
	proxy := newHoldProxy(t, prom.WriteURL())

	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "replaykill"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	cfg := fmt.Sprintf(`kubeconfig: %s
resources: [pods]
namespaces: [%s]
snapshot_interval: 1s
listen_address: %s
shutdown_timeout: 20s
external_labels: {run: replaykill}
remote_write:
  - url: %s
    name: prom
    remote_timeout: 10s
    disk_buffer:
      directory: %s
    queue_config:
      min_shards: 1
      max_shards: 1
      max_samples_per_send: %d
      batch_send_deadline: 100ms
      min_backoff: 50ms
      max_backoff: 500ms
`, env.cp.Kubeconfig, ns, listenPlaceholder, proxy.URL(), filepath.Join(dir, "buffer"), replayPerSend)
	scrape := func(p *agentProcess) string {
		t.Helper()
		return p.metrics(t)
	}
	const ep = `endpoint="prom"`

	agent1 := startAgentProcess(t, bin, cfg)
	eventually(t, 60*time.Second, "run 1 delivering", func() error {
		m := scrape(agent1)
		if n, sent := textMetric(m, "kube_state_push_snapshot_total", ""), textMetric(m, "kube_state_push_remote_samples_sent_total", ep); n < 3 || sent == 0 {
			return fmt.Errorf("%g snapshots, %g samples sent", n, sent)
		}
		return nil
	})

	prom.Stop()
	atStop := textMetric(scrape(agent1), "kube_state_push_snapshot_total", "")
	eventually(t, 60*time.Second, fmt.Sprintf("%d snapshots while Prometheus is down", replayOutage), func() error {
		if n := textMetric(scrape(agent1), "kube_state_push_snapshot_total", "") - atStop; n < replayOutage {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	m := scrape(agent1)
	backlog := textMetric(m, "kube_state_push_remote_queue_length", ep)
	perSnapshot := textMetric(m, "kube_state_push_snapshot_samples", "")
	require.GreaterOrEqual(t, backlog, (replayOutage-1)*perSnapshot, "the outage is in the disk buffer")

	// Back, but slow: the replay takes a request per 0.4 s, two or three
	// per snapshot.
	proxy.hold.Store(int64(replayHold))
	require.NoError(t, prom.Restart(ctx))
	answeredAtRestart := proxy.answered()
	eventually(t, 30*time.Second, "the replay under way, a request held", func() error {
		if n := proxy.answered() - answeredAtRestart; n < 3 || proxy.holding.Load() == 0 {
			return fmt.Errorf("%d replay requests answered, %d held", n, proxy.holding.Load())
		}
		return nil
	})
	m = scrape(agent1)
	agent1.kill()
	killedAt := time.Now()
	taken1 := textMetric(m, "kube_state_push_snapshot_total", "")
	left := textMetric(m, "kube_state_push_remote_queue_length", ep)
	perSnapshot = max(perSnapshot, textMetric(m, "kube_state_push_snapshot_samples", ""))
	require.Greater(t, left, float64(replayAheadFrames)*perSnapshot, "killed with a backlog left")
	for _, r := range dropReasons {
		require.Zero(t, textMetric(m, "kube_state_push_remote_samples_dropped_total", ep+`,reason="`+r+`"`), "run 1 dropped %s", r)
	}
	eventually(t, 10*time.Second, "the held requests forwarded", func() error {
		if n := proxy.holding.Load(); n > 0 {
			return fmt.Errorf("%d held", n)
		}
		return nil
	})
	held := proxy.lateSamples(killedAt)
	t.Logf("run 1 killed after %g snapshots (%g during the outage, %.0f samples each), %.0f samples queued, %d in requests answered after the kill",
		taken1, taken1-atStop, perSnapshot, left, held)

	// Run 2, on the same buffer, at full speed.
	proxy.hold.Store(0)
	agent2 := startAgentProcess(t, bin, cfg)
	var drainedIn time.Duration
	started2 := time.Now()
	eventually(t, 60*time.Second, "run 2 drained the buffer", func() error {
		m := scrape(agent2)
		if q, n := textMetric(m, "kube_state_push_remote_queue_length", ep), textMetric(m, "kube_state_push_snapshot_total", ""); q > 0 || n < 3 {
			return fmt.Errorf("%g samples queued, %g snapshots", q, n)
		}
		drainedIn = time.Since(started2)
		return nil
	})
	m = scrape(agent2)
	require.NoError(t, agent2.stop(t), "exit 0 after SIGTERM; log:\n%s", agent2.out)
	taken2 := textMetric(m, "kube_state_push_snapshot_total", "")
	resent := textMetric(m, "kube_state_push_remote_samples_resent_total", ep)
	refused := textMetric(m, "kube_state_push_remote_samples_dropped_total", ep+`,reason="resent"`)
	other := map[string]float64{}
	for _, r := range dropReasons {
		if n := textMetric(m, "kube_state_push_remote_samples_dropped_total", ep+`,reason="`+r+`"`); n > 0 {
			other[r] = n
		}
	}

	// What Prometheus holds.
	series, err := prom.RawSamples(ctx, `{run="replaykill"}`, 10*time.Minute)
	require.NoError(t, err)
	var counter testenv.ExportedSeries
	var nsSeries []testenv.ExportedSeries
	largest := 0.0 // the largest snapshot, in samples
	for _, s := range series {
		switch {
		case s.Metric["__name__"] == "kube_state_push_snapshot_total":
			require.Empty(t, counter.Metric, "one snapshot counter series")
			counter = s
		case s.Metric["__name__"] == "kube_state_push_snapshot_samples":
			// Each snapshot holds the size of the one before.
			largest = max(largest, slices.Max(s.Values))
		case s.Metric["namespace"] == ns:
			nsSeries = append(nsSeries, s)
		}
	}
	require.NotEmpty(t, counter.Timestamps, "the snapshot counter is stored")
	require.NotEmpty(t, nsSeries)
	// The counter's samples, in time order, count 1, 2, ... in run 1 and
	// again in run 2: two unbroken runs, one per process.
	var runs [][]float64
	for i, v := range counter.Values {
		if i == 0 || v != counter.Values[i-1]+1 {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], v)
	}
	lens := make([]int, len(runs))
	for i, r := range runs {
		lens[i] = len(r)
	}
	require.Len(t, runs, 2, "two unbroken runs of snapshots (lengths %v), one per process", lens)
	require.Equal(t, runs[0][0], runs[1][0], "each run starts from the first snapshot")
	// Run 1 may have taken one more snapshot between the last scrape and
	// the kill; run 2 takes a final one at SIGTERM.
	require.GreaterOrEqual(t, float64(lens[0]), taken1, "run 1: every snapshot stored")
	require.LessOrEqual(t, float64(lens[0]), taken1+1)
	require.GreaterOrEqual(t, float64(lens[1]), taken2, "run 2: every snapshot stored")
	require.LessOrEqual(t, float64(lens[1]), taken2+2)

	// None partial: every series of the namespace has a sample at every
	// snapshot.
	ticks := counter.Timestamps
	partial := 0
	for _, s := range nsSeries {
		if !slices.Equal(ticks, s.Timestamps) {
			partial++
			t.Errorf("%s: %d samples at %d snapshots; missing at %v", labelKey(s.Metric), len(s.Timestamps), len(ticks), missingTicks(ticks, s.Timestamps))
		}
	}

	largest = max(largest, perSnapshot)
	// The lanes flag a whole batch as resent when its first sample is:
	// the batch that runs from the last snapshot in flight into the next
	// one counts up to a batch of samples never sent before.
	bound := float64(replayAheadFrames)*largest + replayPerSend
	dups := proxy.duplicates()
	t.Logf("snapshots taken: run 1 %g(+1), run 2 %g(+2 at SIGTERM); stored %d (runs of %v), %d namespace series, %d partial",
		taken1, taken2, len(ticks), lens, len(nsSeries), partial)
	t.Logf("run 2: drained in %s; resent %g accepted + %g refused (dropped as resent) = %g, other drops %v; "+
		"samples accepted twice %d; in flight at most %d snapshots of up to %.0f samples (+ a batch of %d: bound %.0f)",
		drainedIn.Round(10*time.Millisecond), resent, refused, resent+refused, other, dups, replayAheadFrames, largest, replayPerSend, bound)
	require.Zero(t, partial, "no partial snapshot")
	require.Empty(t, other, "nothing dropped but refused resends")
	require.Positive(t, resent, "run 2 resent what was in flight")
	require.LessOrEqual(t, resent+refused, bound, "no more than the snapshots in flight")
	require.LessOrEqual(t, float64(dups), resent+refused, "every sample accepted twice was counted as resent")
}

// dropReasons are the drop reasons other than resent.
var dropReasons = []string{"bad_request", "conflict", "too_large", "unsupported", "rate_limited", "client_error",
	"shutdown", "retries_ended", "too_old", "buffer_full", "buffer_error", "queue_full"}

// missingTicks returns the ticks not in got (both sorted), at most five.
func missingTicks(ticks, got []int64) []int64 {
	var out []int64
	for _, ts := range ticks {
		if _, ok := slices.BinarySearch(got, ts); !ok && len(out) < 5 {
			out = append(out, ts)
		}
	}
	return out
}

// textMetric returns the sum of the samples of family name in exposition
// text whose label text contains match ("" for all), 0 when there are
// none.
func textMetric(text, name, match string) float64 {
	sum := 0.0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') || !strings.Contains(rest, match) {
			continue
		}
		if v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// holdProxy forwards Remote-Write requests to a receiver, holding each for
// a while first when told to; a held request is forwarded even if its
// client has gone meanwhile, as a receiver that got the request just
// before the sender died stores it.
type holdProxy struct {
	srv    *httptest.Server
	target string
	// hold is how long to hold each request (a time.Duration), 0 for none.
	hold atomic.Int64
	// holding counts the requests being held.
	holding atomic.Int32

	// mu guards seen and forwards.
	mu sync.Mutex
	// seen counts the samples of requests the receiver answered with 2xx,
	// by series and timestamp.
	seen map[string]map[int64]int
	// forwards lists the requests the receiver answered, in order.
	forwards []holdForward
}

// holdForward is a request the receiver answered.
type holdForward struct {
	// answered is when its answer came; status is the answer.
	answered time.Time
	status   int
	// samples is how many samples it carried.
	samples int
}

func newHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	p := &holdProxy{target: target, seen: map[string]map[int64]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.handle))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's write URL.
func (p *holdProxy) URL() string { return p.srv.URL + "/api/v1/write" }

func (p *holdProxy) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if d := time.Duration(p.hold.Load()); d > 0 {
		p.holding.Add(1)
		time.Sleep(d) // a slow receiver: the delay is the point
		p.holding.Add(-1)
	}
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
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	p.record(resp.StatusCode, body)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// record notes a request the receiver answered with status.
func (p *holdProxy) record(status int, body []byte) {
	wr, err := encode.DecodeWriteRequest(body)
	if err != nil {
		return
	}
	f := holdForward{answered: time.Now(), status: status}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ts := range wr.Timeseries {
		f.samples += len(ts.Samples)
		if status/100 != 2 {
			continue
		}
		k := promLabelKey(ts.Labels)
		if p.seen[k] == nil {
			p.seen[k] = map[int64]int{}
		}
		for _, s := range ts.Samples {
			p.seen[k][s.Timestamp]++
		}
	}
	p.forwards = append(p.forwards, f)
}

// answered returns the number of requests the receiver answered.
func (p *holdProxy) answered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.forwards)
}

// lateSamples returns the samples of the requests answered after t.
func (p *holdProxy) lateSamples(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.forwards {
		if f.answered.After(t) {
			n += f.samples
		}
	}
	return n
}

// duplicates returns how many samples the receiver accepted more than once
// (each extra time).
func (p *holdProxy) duplicates() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return extraCopies(p.seen)
}
