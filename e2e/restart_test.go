package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
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
	dir := t.TempDir()
	prom, err := testenv.StartPrometheus(ctx, dir)
	require.NoError(t, err)
	defer prom.Stop()
	// Forwarded even when the client has gone: a killed agent's last
	// request may still be stored.
	pass := faultproxy.Always(faultproxy.Hold(0))
	proxy := startProxy(t, prom.WriteURL(), pass)
	// forwarded returns the requests forwarded that arrived from since the
	// proxy started.
	forwarded := func(since time.Duration) []faultproxy.Record {
		var out []faultproxy.Record
		for _, r := range proxy.Records() {
			if r.Outcome == faultproxy.Forwarded && r.At >= since {
				out = append(out, r)
			}
		}
		return out
	}
	// timestamps returns the timestamps of the samples of recs.
	timestamps := func(recs []faultproxy.Record) []int64 {
		var out []int64
		for _, r := range recs {
			if r.Write == nil {
				continue
			}
			for _, ts := range r.Write.Timeseries {
				for _, s := range ts.Samples {
					out = append(out, s.Timestamp)
				}
			}
		}
		return out
	}
	// tickCount returns the number of distinct timestamps forwarded.
	tickCount := func() int {
		all := map[int64]bool{}
		for _, ts := range timestamps(forwarded(0)) {
			all[ts] = true
		}
		return len(all)
	}

	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "restart"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, ns)
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)
	defer func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()

	const shards, perSend = 2, 50
	bufDir := filepath.Join(dir, "buffer")
	cfg := newConfig(proxy.URL())
	cfg.Resources = []string{"nodes", "pods"}
	cfg.Namespaces = []string{ns}
	cfg.SnapshotInterval = restartInterval
	cfg.ExternalLabels = map[string]string{"run": "restart"}
	cfg.ShutdownTimeout = 20 * time.Second
	cfg.RemoteWrite[0] = &remoteWrite{URL: proxy.URL(), Name: "prom", DiskBuffer: &diskBuffer{Directory: bufDir}, QueueConfig: queueConfig{
		MinShards: shards, MaxShards: shards, MaxSamplesPerSend: perSend,
		MinBackoff: 30 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, MaxRetryDuration: 2 * time.Second,
	}}
	ep := map[string]string{"endpoint": "prom"}
	dropped := func(reason string) map[string]string { return map[string]string{"reason": reason} }
	// ticksSeen waits until the receiver has n more ticks than now.
	ticksSeen := func(what string, n int) {
		t.Helper()
		before := tickCount()
		eventually(t, time.Duration(n+10)*restartInterval, what, func() error {
			if got := tickCount() - before; got < n {
				return fmt.Errorf("%d new ticks at the receiver", got)
			}
			return nil
		})
	}

	// Run 1, then a slow receiver: requests are held 1.5 s, so each shard
	// has one in flight and ticks pile up on disk; SIGKILL meanwhile.
	a := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	ticksSeen("run 1 pushing", 3)
	proxy.SetRules(faultproxy.Always(faultproxy.Hold(1500 * time.Millisecond)))
	eventually(t, 10*time.Second, "requests held", func() error {
		if n := proxy.Holding(); n < shards {
			return fmt.Errorf("%d requests held", n)
		}
		return nil
	})
	eventually(t, 10*time.Second, "ticks queued on disk behind them", func() error {
		m := a.metrics(t)
		perTick := m.present(t, "kube_state_push_snapshot_samples", nil)
		if q := m.present(t, "kube_state_push_remote_queue_length", ep); q < 2*perTick {
			return fmt.Errorf("%.0f samples queued, %.0f per snapshot", q, perTick)
		}
		return nil
	})
	a.kill()
	killedAt := time.Now()
	proxy.SetRules(pass)
	eventually(t, 10*time.Second, "held requests forwarded", func() error {
		if n := proxy.Holding(); n > 0 {
			return fmt.Errorf("%d requests still held", n)
		}
		return nil
	})
	restartedAt := time.Since(proxy.Start())

	// Run 2 on the same directory.
	a.restart(t)
	ticksSeen("run 2 pushing", 3)
	lateOld := 0
	for _, ts := range timestamps(forwarded(restartedAt)) {
		if ts < killedAt.UnixMilli() {
			lateOld++
		}
	}
	require.Positive(t, lateOld, "the backlog queued before the kill was sent after the restart")

	// An outage of the receiver for 10 intervals: the agent keeps ticking
	// into the disk buffer.
	proxy.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	outageStart := time.Now()
	eventually(t, 30*time.Second, "an outage of 10 intervals", func() error {
		if d := time.Since(outageStart); d < 10*restartInterval {
			return fmt.Errorf("down for %s", d)
		}
		return nil
	})
	m := a.metrics(t)
	bufBytes := m.present(t, "kube_state_push_remote_buffer_bytes", ep)
	bufSegs := m.present(t, "kube_state_push_remote_buffer_segments", ep)
	queued := m.present(t, "kube_state_push_remote_queue_length", ep)
	perTick := m.present(t, "kube_state_push_snapshot_samples", nil)
	onDisk := dirSize(t, bufDir)
	outage := time.Since(outageStart)
	t.Logf("receiver down %.1fs (%d intervals of %s), %.0f samples per snapshot: %.0f samples buffered, "+
		"%.0f bytes in %.0f segments (%d bytes in the directory), %.1f bytes per sample",
		outage.Seconds(), int(outage/restartInterval), restartInterval, perTick, queued, bufBytes, bufSegs, onDisk, bufBytes/queued)
	require.GreaterOrEqual(t, queued, 9*perTick, "the outage's snapshots are buffered")
	require.Positive(t, bufBytes)
	require.GreaterOrEqual(t, onDisk, int64(bufBytes))
	require.Zero(t, m.present(t, `kube_state_push_remote_samples_dropped_total`, dropped("retries_ended")), "kept, not dropped")

	proxy.SetRules(pass)
	eventually(t, 30*time.Second, "the outage's backlog drained", func() error {
		// One snapshot may be queued at any time.
		if q := a.metrics(t).present(t, "kube_state_push_remote_queue_length", ep); q > perTick {
			return fmt.Errorf("%.0f samples queued", q)
		}
		return nil
	})
	ticksSeen("run 2 after the outage", 2)
	m = a.metrics(t)
	require.NoError(t, a.stop(), "exit 0 after SIGTERM; log:\n%s", a.logs)

	// At most the snapshots in flight (the replayer keeps two handed to
	// the shards) were sent twice, and the agent counted those samples as
	// resent (or refused as resent).
	resent := m.present(t, "kube_state_push_remote_samples_resent_total", ep) +
		m.present(t, "kube_state_push_remote_samples_dropped_total", dropped("resent"))
	dups := extraCopies(forwardedSamples(proxy.Records(), anyStatus))
	t.Logf("samples sent twice: %d (counted by the agent as resent: %.0f; limit 2 snapshots of %.0f)", dups, resent, perTick)
	require.LessOrEqual(t, float64(dups), 2*perTick)
	require.LessOrEqual(t, float64(dups), resent)
	for _, r := range []string{"bad_request", "conflict", "buffer_full", "buffer_error", "shutdown", "retries_ended", "queue_full", "too_old"} {
		require.Zero(t, m.present(t, "kube_state_push_remote_samples_dropped_total", dropped(r)), "dropped %s", r)
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
		len(series), len(ticks), partial, len(forwarded(0)), lateOld)
}
