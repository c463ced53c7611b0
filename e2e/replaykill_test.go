package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
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
	dir := t.TempDir()
	prom, err := testenv.StartPrometheus(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(prom.Stop)
	// Every request is forwarded even if its client has gone: a receiver
	// that got it just before the kill stores it.
	proxy := startProxy(t, prom.WriteURL(), faultproxy.Always(faultproxy.Hold(0)))

	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "replaykill"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	cfg := newConfig(proxy.URL())
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 20 * time.Second
	cfg.ExternalLabels = map[string]string{"run": "replaykill"}
	cfg.RemoteWrite[0] = &remoteWrite{
		URL: proxy.URL(), Name: "prom", RemoteTimeout: 10 * time.Second,
		DiskBuffer: &diskBuffer{Directory: filepath.Join(dir, "buffer")},
		QueueConfig: queueConfig{
			MinShards: 1, MaxShards: 1, MaxSamplesPerSend: replayPerSend,
			BatchSendDeadline: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
		},
	}
	scrape := func(p *testAgent) selfMetrics {
		t.Helper()
		return p.metrics(t)
	}
	ep := map[string]string{"endpoint": "prom"}
	dropped := func(reason string) map[string]string { return map[string]string{"endpoint": "prom", "reason": reason} }
	// answered counts the requests Prometheus answered; lateSamples the
	// samples of those answered after at.
	answered := func() int {
		return faultproxy.Sum(proxy.Records(), func(r faultproxy.Record) bool { return r.Outcome == faultproxy.Forwarded }).Requests
	}
	lateSamples := func(at time.Time) int {
		return faultproxy.Sum(proxy.Records(), func(r faultproxy.Record) bool {
			return r.Outcome == faultproxy.Forwarded && proxy.Start().Add(r.Answered).After(at)
		}).Samples
	}

	agent1 := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	eventually(t, 60*time.Second, "run 1 delivering", func() error {
		m := scrape(agent1)
		if n, sent := m.value(t, "kube_state_push_snapshot_total", nil), m.value(t, "kube_state_push_remote_samples_sent_total", ep); n < 3 || sent == 0 {
			return fmt.Errorf("%g snapshots, %g samples sent", n, sent)
		}
		return nil
	})

	prom.Stop()
	atStop := scrape(agent1).value(t, "kube_state_push_snapshot_total", nil)
	eventually(t, 60*time.Second, fmt.Sprintf("%d snapshots while Prometheus is down", replayOutage), func() error {
		if n := scrape(agent1).value(t, "kube_state_push_snapshot_total", nil) - atStop; n < replayOutage {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	m := scrape(agent1)
	backlog := m.value(t, "kube_state_push_remote_queue_length", ep)
	perSnapshot := m.value(t, "kube_state_push_snapshot_samples", nil)
	require.GreaterOrEqual(t, backlog, (replayOutage-1)*perSnapshot, "the outage is in the disk buffer")

	// Back, but slow: the replay takes a request per 0.4 s, two or three
	// per snapshot.
	proxy.SetRules(faultproxy.Always(faultproxy.Hold(replayHold)))
	require.NoError(t, prom.Restart(ctx))
	answeredAtRestart := answered()
	eventually(t, 30*time.Second, "the replay under way, a request held", func() error {
		if n := answered() - answeredAtRestart; n < 3 || proxy.Holding() == 0 {
			return fmt.Errorf("%d replay requests answered, %d held", n, proxy.Holding())
		}
		return nil
	})
	m = scrape(agent1)
	agent1.kill()
	killedAt := time.Now()
	taken1 := m.value(t, "kube_state_push_snapshot_total", nil)
	left := m.value(t, "kube_state_push_remote_queue_length", ep)
	perSnapshot = max(perSnapshot, m.value(t, "kube_state_push_snapshot_samples", nil))
	require.Greater(t, left, float64(replayAheadFrames)*perSnapshot, "killed with a backlog left")
	for _, r := range dropReasons {
		require.Zero(t, m.value(t, "kube_state_push_remote_samples_dropped_total", dropped(r)), "run 1 dropped %s", r)
	}
	eventually(t, 10*time.Second, "the held requests forwarded", func() error {
		if n := proxy.Holding(); n > 0 {
			return fmt.Errorf("%d held", n)
		}
		return nil
	})
	held := lateSamples(killedAt)
	t.Logf("run 1 killed after %g snapshots (%g during the outage, %.0f samples each), %.0f samples queued, %d in requests answered after the kill",
		taken1, taken1-atStop, perSnapshot, left, held)

	// Run 2, on the same buffer, at full speed.
	proxy.SetRules(faultproxy.Always(faultproxy.Hold(0)))
	agent2 := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	var drainedIn time.Duration
	started2 := time.Now()
	eventually(t, 60*time.Second, "run 2 drained the buffer", func() error {
		m := scrape(agent2)
		if q, n := m.value(t, "kube_state_push_remote_queue_length", ep), m.value(t, "kube_state_push_snapshot_total", nil); q > 0 || n < 3 {
			return fmt.Errorf("%g samples queued, %g snapshots", q, n)
		}
		drainedIn = time.Since(started2)
		return nil
	})
	m = scrape(agent2)
	require.NoError(t, agent2.stop(), "exit 0 after SIGTERM; log:\n%s", agent2.logs)
	taken2 := m.value(t, "kube_state_push_snapshot_total", nil)
	resent := m.value(t, "kube_state_push_remote_samples_resent_total", ep)
	refused := m.value(t, "kube_state_push_remote_samples_dropped_total", dropped("resent"))
	other := map[string]float64{}
	for _, r := range dropReasons {
		if n := m.value(t, "kube_state_push_remote_samples_dropped_total", dropped(r)); n > 0 {
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
	// The shards flag a whole batch as resent when its first sample is:
	// the batch that runs from the last snapshot in flight into the next
	// one counts up to a batch of samples never sent before.
	bound := float64(replayAheadFrames)*largest + replayPerSend
	dups := extraCopies(forwardedSamples(proxy.Records(), accepted))
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
