package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Outages longer than the receiver's acceptance window (a TSDB head takes
// samples about an hour behind its newest): what the agent
// sends too late is refused or left unsent, counted as too_old, and never
// retried forever.
func TestReceiverWindow(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "window"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	t.Run("head moved ahead", func(t *testing.T) { runWindowHeadAhead(t, ctx, ns) })
	t.Run("sample age limit", func(t *testing.T) { runWindowAgeLimit(t, ctx, ns) })
}

// windowEndpoint is the endpoint name of the window tests' agents.
const windowEndpoint = "receiver"

// windowAgent starts an in-process agent pushing ns through url, with the
// queue settings of the outage tests, changed by queue, and, with
// bufferDir, a disk buffer there.
func windowAgent(t *testing.T, ctx context.Context, ns, cluster, url, bufferDir string, queue func(*queueConfig)) *testAgent {
	t.Helper()
	cfg := newConfig(url)
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 20 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": cluster}
	cfg.RemoteWrite[0] = &remoteWrite{URL: url, Name: windowEndpoint, RemoteTimeout: 5 * time.Second, QueueConfig: outageQueue}
	if bufferDir != "" {
		cfg.endpoint().DiskBuffer = &diskBuffer{Directory: bufferDir}
	}
	if queue != nil {
		queue(&cfg.endpoint().QueueConfig)
	}
	return startAgent(t, agentOptions{ctx: ctx, config: cfg})
}

// windowDrops returns the endpoint's dropped samples by reason, and their
// sum.
func windowDrops(t *testing.T, a *testAgent) (map[string]float64, float64) {
	t.Helper()
	out, sum := map[string]float64{}, 0.0
	for _, r := range []string{"bad_request", "conflict", "too_large", "unsupported", "rate_limited", "client_error",
		"shutdown", "retries_ended", "too_old", "buffer_full", "buffer_error", "resent", "queue_full"} {
		out[r] = a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": windowEndpoint, "reason": r})
		sum += out[r]
	}
	return out, sum
}

// recordSamples sorts the samples of the proxy's forwarded requests by the
// answer: accepted (2xx) and refused with 400 (see forwardedSamples).
func recordSamples(recs []faultproxy.Record) (accepted, refused map[string]map[int64]int) {
	return forwardedSamples(recs, func(s int) bool { return s/100 == 2 }),
		forwardedSamples(recs, func(s int) bool { return s == http.StatusBadRequest })
}

// countSamples returns the samples of m, each as often as counted, and how
// many were counted more than once (the extra times).
func countSamples(m map[string]map[int64]int) (total, repeats int) {
	for _, byTS := range m {
		for _, n := range byTS {
			total += n
			repeats += n - 1
		}
	}
	return total, repeats
}

// windowHeadRange is the head chunk range of the Prometheus of (a): it
// accepts samples back to half of it behind its newest.
const windowHeadRange = 4 * time.Minute

// (a) An outage with a disk buffer, after which another writer has pushed a
// sample more than the window ahead of now before the agent gets through:
// Prometheus then refuses, as out of bounds, the whole backlog and every
// current snapshot too. The agent counts them as too_old (not bad_request),
// retries none of them, acknowledges them in its buffer (the queue
// drains), and what Prometheus stored is what the agent counted as sent.
func runWindowHeadAhead(t *testing.T, ctx context.Context, ns string) {
	dir := t.TempDir()
	// Prometheus' write handler refuses samples more than 10 minutes ahead
	// of its clock (maxAheadTime, storage/remote/write_handler.go), so no
	// writer can move a 2h head an hour ahead. The window is scaled down
	// instead: a 4m head range accepts samples back to 2m behind its
	// newest, on the same code path (Head.appendableMinValidTime).
	prom, err := testenv.StartPrometheus(ctx, dir, "--storage.tsdb.min-block-duration="+windowHeadRange.String())
	require.NoError(t, err)
	t.Cleanup(prom.Stop)
	proxy := startProxy(t, prom.WriteURL())
	const cluster = "window-head"
	a := windowAgent(t, ctx, ns, cluster, proxy.URL(), filepath.Join(dir, "buffer"), nil)
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": windowEndpoint}
	a.waitDelivered(t, endpoint, 3)

	prom.Stop()
	down := time.Now()
	atStop := snapshots()
	eventually(t, 30*time.Second, "8 snapshots while Prometheus is down", func() error {
		if n := snapshots() - atStop; n < 8 {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	// The agent is kept out until the head has moved.
	proxy.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	require.NoError(t, prom.Restart(ctx))
	backlog := a.metric(t, "kube_state_push_remote_queue_length", endpoint)
	perSnapshot := a.metric(t, "kube_state_push_snapshot_samples", nil)
	// Self-metrics make snapshots differ by a few samples.
	require.GreaterOrEqual(t, backlog, 7*perSnapshot, "the outage's snapshots are in the disk buffer")

	probe := func(name string, at time.Time) testenv.WriteResult {
		res, err := testenv.PushV1(ctx, prom.WriteURL(), nil, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: name}, {Name: "job", Value: "window-writer"}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: at.UnixMilli()}},
		})
		require.NoError(t, err)
		return res
	}
	res := probe("window_probe_hour", time.Now().Add(61*time.Minute))
	require.Equal(t, http.StatusBadRequest, res.Status, "an hour ahead: %s", res.Body)
	require.Contains(t, res.Body, "too far in the future")
	t.Logf("a sample an hour ahead is answered %d %q", res.Status, res.Body)
	// Ahead of now by the window and 90 s: everything up to 90 s from now
	// is out of bounds.
	res = probe("window_probe_ahead", time.Now().Add(windowHeadRange/2+90*time.Second))
	pushed := time.Now()
	require.Equal(t, http.StatusNoContent, res.Status, "the sample ahead is stored: %s", res.Body)
	res = probe("window_probe_now", time.Now())
	require.Equal(t, http.StatusBadRequest, res.Status, "a sample of now is out of bounds: %s", res.Body)
	require.Contains(t, res.Body, "out of bounds")
	t.Logf("another writer pushed a sample at now+%s; one of now is answered %d %q", windowHeadRange/2+90*time.Second, res.Status, res.Body)

	tooOldAtOpen := a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": windowEndpoint, "reason": "too_old"})
	require.Zero(t, tooOldAtOpen)
	opened := time.Now()
	atOpen := snapshots()
	proxy.SetRules()
	var drained time.Duration
	eventually(t, 30*time.Second, "the backlog refused and acknowledged", func() error {
		tooOld := a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": windowEndpoint, "reason": "too_old"})
		queued := a.metric(t, "kube_state_push_remote_queue_length", endpoint)
		if tooOld < backlog || queued > 0 {
			return fmt.Errorf("%g of %g backlog samples counted as too_old, %g queued", tooOld, backlog, queued)
		}
		drained = time.Since(opened)
		return nil
	})
	// Current snapshots are refused too (until now passes the head's
	// newest minus an hour), each once: no retries.
	failed := a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint)
	atDrained := snapshots()
	eventually(t, 30*time.Second, "three more snapshots", func() error {
		if n := snapshots() - atDrained; n < 3 {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	require.Equal(t, failed, a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint), "no retries once the receiver is back")
	require.Less(t, time.Since(pushed), 85*time.Second, "the checks ran before now entered the window again")
	require.NoError(t, a.stop())

	sent := a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint)
	drops, dropped := windowDrops(t, a)
	require.Positive(t, drops["too_old"])
	require.Equal(t, drops["too_old"], dropped, "too_old and nothing else: %v", drops)
	require.Zero(t, a.metric(t, "kube_state_push_remote_queue_length", endpoint), "nothing left in the buffer")

	accepted, refused := recordSamples(proxy.Records())
	nAccepted, _ := countSamples(accepted)
	nRefused, refusedTwice := countSamples(refused)
	require.Equal(t, int(sent), nAccepted, "samples sent = samples in requests answered 2xx")
	require.Equal(t, int(drops["too_old"]), nRefused, "samples too_old = samples in requests answered 400")
	require.Zero(t, refusedTwice, "no refused sample sent again")

	series, err := prom.RawSamples(ctx, fmt.Sprintf(`{cluster=%q}`, cluster), 10*time.Minute)
	require.NoError(t, err)
	stored := exportedSet(series)
	for k, byTS := range stored {
		for ts := range byTS {
			require.Positive(t, accepted[k][ts], "stored but not counted as sent: %s @%d", k, ts)
			require.Less(t, ts, down.UnixMilli(), "stored from the outage or later: %s @%d", k, ts)
		}
	}
	t.Logf("%g snapshots before the outage, %g during it, %g after (%.0f samples each); backlog %g samples, "+
		"refused and acknowledged %s after the receiver was reachable",
		atStop, atOpen-atStop, snapshots()-atOpen, perSnapshot, backlog, drained.Round(10*time.Millisecond))
	t.Logf("sent %g (in 2xx answers %d), too_old %g (in 400 answers %d), other drops %g; stored %d, all of them sent before the outage",
		sent, nAccepted, drops["too_old"], nRefused, dropped-drops["too_old"], stored.total())
}

// (b) queue_config.sample_age_limit 3s on a memory queue, and the receiver
// down for about 8 s: the samples that passed the limit are not sent but
// counted as too_old, while down and when it is back; those inside the
// window are sent and stored; sent plus dropped is every sample the
// snapshots produced, and nothing is retried once the receiver is back.
func runWindowAgeLimit(t *testing.T, ctx context.Context, ns string) {
	const limit = 3 * time.Second
	dir := t.TempDir()
	prom, err := testenv.StartPrometheus(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(prom.Stop)
	proxy := startProxy(t, prom.WriteURL())
	const cluster = "window-age"
	a := windowAgent(t, ctx, ns, cluster, proxy.URL(), "", func(q *queueConfig) { q.SampleAgeLimit = limit })

	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": windowEndpoint}
	tooOld := func() float64 {
		return a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": windowEndpoint, "reason": "too_old"})
	}
	a.waitDelivered(t, endpoint, 3)
	require.Zero(t, tooOld())

	prom.Stop()
	down := time.Now()
	atStop := snapshots()
	eventually(t, 30*time.Second, "8 s of outage", func() error {
		if d := time.Since(down); d < 8*time.Second {
			return fmt.Errorf("down for %s", d)
		}
		return nil
	})
	tooOldDown := tooOld()
	require.Positive(t, tooOldDown, "samples past the limit are dropped while the receiver is down")
	proxy.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	require.NoError(t, prom.Restart(ctx))
	opened := time.Now()
	atOpen := snapshots()
	proxy.SetRules()
	sentAtOpen := a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint)

	var recovered time.Duration
	eventually(t, 30*time.Second, "the queue drained", func() error {
		queued := a.metric(t, "kube_state_push_remote_queue_length", endpoint)
		sent := a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint)
		if queued > 0 || sent == sentAtOpen {
			return fmt.Errorf("%g samples queued, %g sent since the receiver is back", queued, sent-sentAtOpen)
		}
		recovered = time.Since(opened)
		return nil
	})
	failed := a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint)
	atDrained := snapshots()
	eventually(t, 30*time.Second, "three more snapshots", func() error {
		if n := snapshots() - atDrained; n < 3 {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	require.Equal(t, failed, a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint), "no retries once the receiver is back")
	require.NoError(t, a.stop())

	taken := snapshots()
	produced := a.metric(t, "kube_state_push_samples_produced_total", nil)
	sent := a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint)
	drops, dropped := windowDrops(t, a)
	require.Equal(t, drops["too_old"], dropped, "too_old and nothing else: %v", drops)
	require.Equal(t, produced, sent+dropped, "every sample produced is sent or dropped (sent %g, dropped %v)", sent, drops)

	recs := proxy.Records()
	accepted, _ := recordSamples(recs)
	nAccepted, acceptedTwice := countSamples(accepted)
	require.Equal(t, int(sent), nAccepted, "samples sent = samples in requests answered 2xx")
	require.Zero(t, acceptedTwice)
	// Every sample accepted was inside the limit when it reached the proxy
	// (with a margin for the encoding and the request).
	const margin = time.Second
	oldest := time.Duration(0)
	for _, r := range recs {
		if r.Outcome != faultproxy.Forwarded || r.Status/100 != 2 || r.Write == nil {
			continue
		}
		arrived := proxy.Start().Add(r.At)
		for _, ts := range r.Write.Timeseries {
			for _, s := range ts.Samples {
				age := arrived.Sub(time.UnixMilli(s.Timestamp))
				oldest = max(oldest, age)
				require.Less(t, age, limit+margin, "a sample %s old at the proxy was sent", age)
			}
		}
	}

	series, err := prom.RawSamples(ctx, fmt.Sprintf(`{cluster=%q}`, cluster), 10*time.Minute)
	require.NoError(t, err)
	stored := exportedSet(series)
	want := sampleSet{}
	for k, byTS := range accepted {
		for ts := range byTS {
			want.add(k, ts)
		}
	}
	// Staleness markers are sent, but Prometheus' range vectors leave them
	// out.
	for _, r := range recs {
		if r.Outcome != faultproxy.Forwarded || r.Status/100 != 2 || r.Write == nil {
			continue
		}
		for _, ts := range r.Write.Timeseries {
			for _, s := range ts.Samples {
				if encode.IsStaleNaN(s.Value) {
					delete(want[promLabelKey(ts.Labels)], s.Timestamp)
				}
			}
		}
	}
	require.Empty(t, want.diff(stored), "stored = sent")

	// The outage's snapshots: those that were inside the limit when the
	// receiver was back are stored, older ones not.
	ticks := stored.filter(`__name__="kube_state_push_snapshot_total"`)
	require.Len(t, ticks, 1)
	during, kept := 0, 0
	for k := range ticks {
		for _, ts := range stored.sorted(k) {
			if ts >= down.UnixMilli() && ts < opened.UnixMilli() {
				during++
				require.Greater(t, ts, opened.Add(-limit-margin).UnixMilli(), "an outage snapshot past the limit stored")
			}
		}
		kept = len(ticks[k])
	}
	require.Positive(t, during, "the outage's last snapshots, inside the limit, are stored")
	t.Logf("receiver down %s: %g snapshots during the outage, %d of them stored (inside %s); %d of %g snapshots stored",
		opened.Sub(down).Round(10*time.Millisecond), atOpen-atStop, during, limit, kept, taken)
	t.Logf("produced %.0f samples: sent %g (stored %d) + too_old %g (%g while down); the queue drained %s after the receiver was back; oldest sample sent %s old",
		produced, sent, stored.total(), drops["too_old"], tooOldDown, recovered.Round(10*time.Millisecond), oldest.Round(time.Millisecond))
}
