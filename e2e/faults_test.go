package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
)

// Timing of the fault schedule. remote_timeout must lie between slowAnswer
// and abandonAfter, with room on a loaded machine.
const (
	// faultsRemoteTimeout is the agent's remote_timeout: long enough that
	// Prometheus answers a forwarded request within it on a loaded machine.
	faultsRemoteTimeout = 4 * time.Second
	// slowAnswer delays a request that still succeeds.
	slowAnswer = 300 * time.Millisecond
	// abandonAfter delays a request past remote_timeout: the agent gives up
	// on it and retries.
	abandonAfter = 10 * time.Second
	// bodyLimit is the proxy's request size limit (compressed bytes) above
	// which a request with samples is answered 413. A full batch of
	// faultsBatch samples is larger; a single sample is far smaller.
	bodyLimit = 2048
	// faultsBatch is the agent's max_samples_per_send.
	faultsBatch = 100
)

// The agent pushes through a fault-injecting proxy into a real Prometheus.
// The proxy answers the first sample requests with a 503 burst, a 429 with
// Retry-After in seconds, one with an HTTP date, a closed connection, a slow
// answer, and one slower than remote_timeout; then it answers 413 to any
// request above a size, and to any request holding the series
// kube_pod_info{pod="oversize"}, which the agent splits down to that single
// sample and drops as too_large. The agent's counters must equal what the
// proxy recorded, and Prometheus must hold exactly the samples forwarded:
// every sample the agent produced except the ones dropped as too large.
func TestFaultsThroughProxy(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "faults"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3", "oversize")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	prom := startPrometheus(t)

	oversize := faultproxy.HasSeries(map[string]string{"__name__": "kube_pod_info", "namespace": ns, "pod": "oversize"})
	tooBig := func(r *faultproxy.Request) bool { return r.Samples > 0 && r.BodyBytes > bodyLimit }
	proxy, err := faultproxy.New(prom.WriteURL(),
		faultproxy.Nth(faultproxy.HasSamples,
			faultproxy.Respond(http.StatusServiceUnavailable),
			faultproxy.Respond(http.StatusServiceUnavailable),
			faultproxy.Respond(http.StatusServiceUnavailable),
			faultproxy.RetryAfterSeconds(http.StatusTooManyRequests, time.Second),
			faultproxy.RetryAfterDate(http.StatusTooManyRequests, time.Second),
			faultproxy.CloseConnection(),
			faultproxy.Forward().After(slowAnswer),
			faultproxy.Forward().After(abandonAfter),
		),
		faultproxy.When(oversize, faultproxy.Respond(http.StatusRequestEntityTooLarge)),
		faultproxy.When(tooBig, faultproxy.Respond(http.StatusRequestEntityTooLarge)),
	)
	require.NoError(t, err)
	t.Cleanup(proxy.Close)

	// One shard, so that the requests of the schedule are one batch's
	// attempts, in order.
	cfg := newConfig(proxy.URL())
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 30 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": "faults"}
	cfg.RemoteWrite[0] = &remoteWrite{URL: proxy.URL(), Name: "faulty", RemoteTimeout: faultsRemoteTimeout, QueueConfig: queueConfig{
		MinShards: 1, MaxShards: 1, MaxSamplesPerSend: faultsBatch,
		BatchSendDeadline: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})

	// Run until the schedule is used up, both kinds of 413 were answered,
	// and the agent has caught up and delivered three more snapshots.
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	var after float64
	eventually(t, 90*time.Second, "every fault answered", func() error {
		recs := proxy.Records()
		abandoned := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Outcome == faultproxy.Abandoned })
		split := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Status == 413 && r.Samples > 1 })
		single := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Status == 413 && r.Samples == 1 })
		if abandoned.Requests == 0 || split.Requests == 0 || single.Requests == 0 {
			return fmt.Errorf("%d requests; abandoned %d, 413 with several samples %d, with one %d",
				len(recs), abandoned.Requests, split.Requests, single.Requests)
		}
		after = snapshots()
		return nil
	})
	eventually(t, 60*time.Second, "the agent catches up", func() error {
		queued := a.metric(t, "kube_state_push_remote_queue_length", map[string]string{"endpoint": "faulty"})
		if n := snapshots(); n < after+3 || queued > 0 {
			return fmt.Errorf("%g snapshots since the faults, %g samples queued", n-after, queued)
		}
		return nil
	})
	require.NoError(t, a.stop(), "the agent stops with nothing left to drop")
	recs := proxy.Records()

	counter := func(name string, labels map[string]string) int {
		if labels == nil {
			labels = map[string]string{}
		}
		labels["endpoint"] = "faulty"
		return int(a.metric(t, "kube_state_push_remote_"+name, labels))
	}
	is2xx := func(r faultproxy.Record) bool { return r.Outcome == faultproxy.Forwarded && r.Status/100 == 2 }
	recoverable := func(r faultproxy.Record) bool {
		switch r.Outcome {
		case faultproxy.Dropped, faultproxy.Abandoned:
			return true
		case faultproxy.Forwarded, faultproxy.Injected, faultproxy.UpstreamError:
			return r.Status >= 500 || r.Status == http.StatusTooManyRequests
		}
		return false
	}
	sent := faultproxy.Sum(recs, is2xx)
	failed := faultproxy.Sum(recs, recoverable)
	retried := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Attempt > 0 })
	split := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Status == 413 && r.Samples > 1 })
	single := faultproxy.Sum(recs, func(r faultproxy.Record) bool { return r.Status == 413 && r.Samples == 1 })
	t.Logf("proxy: %d requests; 2xx %d (%d samples, %d bytes); recoverable failures %d (%d samples); retries %d (%d samples); 413 split %d (%d samples); 413 single %d",
		len(recs), sent.Requests, sent.Samples, sent.Bytes, failed.Requests, failed.Samples, retried.Requests, retried.Samples, split.Requests, split.Samples, single.Requests)

	t.Run("the schedule as the agent met it", func(t *testing.T) {
		var withSamples []faultproxy.Record
		for _, r := range recs {
			if r.Samples > 0 {
				withSamples = append(withSamples, r)
			}
		}
		require.GreaterOrEqual(t, len(withSamples), 9)
		// One batch tried seven times, with Retry-Attempt counting up.
		want := []struct {
			outcome faultproxy.Outcome
			status  int
		}{
			{faultproxy.Injected, 503}, {faultproxy.Injected, 503}, {faultproxy.Injected, 503},
			{faultproxy.Injected, 429}, {faultproxy.Injected, 429},
			{faultproxy.Dropped, 0},
			{faultproxy.Forwarded, 204},
		}
		for i, w := range want {
			r := withSamples[i]
			require.Equal(t, w.outcome, r.Outcome, "sample request %d", i+1)
			require.Equal(t, w.status, r.Status, "sample request %d", i+1)
			require.Equal(t, i, r.Attempt, "sample request %d: Retry-Attempt", i+1)
			require.Equal(t, withSamples[0].Samples, r.Samples, "sample request %d resends the first batch", i+1)
		}
		require.Equal(t, slowAnswer, withSamples[6].Delay)
		// Then a new batch, abandoned past remote_timeout and sent again.
		require.Equal(t, faultproxy.Abandoned, withSamples[7].Outcome)
		require.Equal(t, 0, withSamples[7].Attempt)
		require.Equal(t, 1, withSamples[8].Attempt)
		require.Equal(t, withSamples[7].Samples, withSamples[8].Samples)

		// Retry-After is honoured, in seconds and as a date (the 503s were
		// retried after the backoff of 25-50ms).
		backoff := withSamples[1].At - withSamples[0].At
		afterDelay := withSamples[4].At - withSamples[3].At
		afterDate := withSamples[5].At - withSamples[4].At
		t.Logf("gaps: after a 503 %s, after Retry-After: 1 %s, after Retry-After: <date> %s", backoff, afterDelay, afterDate)
		require.GreaterOrEqual(t, afterDelay, time.Second)
		require.GreaterOrEqual(t, afterDate, time.Second)
		abandonedFor := withSamples[8].At - withSamples[7].At
		require.GreaterOrEqual(t, abandonedFor, faultsRemoteTimeout, "the agent waited remote_timeout")
		require.Less(t, abandonedFor, abandonAfter, "and did not wait for the answer")
	})

	t.Run("counters equal the proxy's records", func(t *testing.T) {
		require.Equal(t, sent.Samples, counter("samples_sent_total", nil), "samples sent = samples in 2xx answers")
		require.Equal(t, sent.Bytes, counter("sent_bytes_total", nil), "bytes sent = body bytes of 2xx answers")
		require.Equal(t, failed.Samples, counter("samples_failed_total", nil), "failed = samples in 5xx, 429, dropped and abandoned requests")
		require.Equal(t, retried.Samples, counter("samples_retried_total", nil), "retried = samples in requests with Retry-Attempt")
		require.Equal(t, failed.Samples, retried.Samples, "every failed request was retried")
		require.Equal(t, single.Samples, counter("samples_dropped_total", map[string]string{"reason": "too_large"}), "too_large = single samples answered 413")
		require.Equal(t, single.Samples, counter("samples_dropped_total", nil), "no other drops")
		require.Positive(t, single.Samples)
		codes := map[int]int{}
		for _, r := range recs {
			if r.Status != 0 {
				codes[r.Status]++
			}
		}
		for code, n := range codes {
			require.Equal(t, n, counter("requests_total", map[string]string{"code": strconv.Itoa(code)}), "requests answered %d", code)
		}
		require.Zero(t, counter("requests_total", map[string]string{"code": "error"}), "no request ended without an answer")
		require.Equal(t, 3, codes[503])
		require.Equal(t, 2, codes[429])
		for _, r := range recs {
			require.False(t, r.ClientGone, "request %d: the client left after it was forwarded", r.Seq)
			require.NoError(t, r.DecodeErr, "request %d", r.Seq)
		}
	})

	// What the agent produced: every sample of every request; what it
	// delivered: the samples of 2xx answers, each once.
	produced, delivered, refused := sampleSet{}, sampleSet{}, sampleSet{}
	for _, r := range recs {
		if r.Write == nil {
			continue // checked above: every request decoded
		}
		for _, ts := range r.Write.Timeseries {
			k := promLabelKey(ts.Labels)
			for _, s := range ts.Samples {
				if encode.IsStaleNaN(s.Value) {
					continue
				}
				produced.add(k, s.Timestamp)
				switch {
				case is2xx(r):
					require.False(t, delivered.add(k, s.Timestamp), "%s@%d delivered twice", k, s.Timestamp)
				case r.Status == 413 && r.Samples == 1:
					refused.add(k, s.Timestamp)
				}
			}
		}
	}

	t.Run("every sample produced is delivered, except the refused ones", func(t *testing.T) {
		require.Equal(t, single.Samples, refused.total())
		for k, ts := range refused {
			require.Contains(t, k, `pod="oversize"`)
			require.Contains(t, k, `__name__="kube_pod_info"`)
			for x := range ts {
				require.False(t, delivered[k][x], "%s@%d both refused and delivered", k, x)
				delivered.add(k, x) // for the comparison below
			}
		}
		require.Empty(t, produced.diff(delivered))
		for k, ts := range refused {
			for x := range ts {
				delete(delivered[k], x)
			}
		}
	})

	t.Run("Prometheus holds exactly the delivered samples", func(t *testing.T) {
		stored, err := prom.RawSamples(ctx, `{__name__=~".+"}`, 10*time.Minute)
		require.NoError(t, err)
		got := exportedSet(stored)
		require.Empty(t, delivered.diff(got))
		t.Logf("produced %d samples, delivered %d, refused as too large %d, found in Prometheus %d",
			produced.total(), delivered.total(), refused.total(), got.total())

		// One sample per snapshot of the self-metric counting them: as
		// many as the agent took.
		ticks := got.filter(`__name__="kube_state_push_snapshot_total"`)
		require.Len(t, ticks, 1)
		var tickKey string
		for k := range ticks {
			tickKey = k
		}
		require.Equal(t, int(a.metric(t, "kube_state_push_snapshot_total", nil)), len(ticks[tickKey]), "snapshots taken = snapshots stored")
		// Each web pod's info series has a sample at every snapshot from
		// its first on.
		all := got.sorted(tickKey)
		for _, pod := range []string{"web-1", "web-2", "web-3"} {
			infos := got.filter(`__name__="kube_pod_info"`, `pod="`+pod+`"`)
			require.Len(t, infos, 1, pod)
			for k := range infos {
				ts := got.sorted(k)
				require.NotEmpty(t, ts)
				first := 0
				for first < len(all) && all[first] < ts[0] {
					first++
				}
				require.Equal(t, all[first:], ts, "%s: a sample at every snapshot from its first", pod)
				t.Logf("%s: %d samples stored, %d snapshots since it appeared", pod, len(ts), len(all)-first)
			}
		}
	})
}
