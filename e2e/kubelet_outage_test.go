package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// Kubelet series carry the kubelet's own sample times, which the disk
// buffer keeps per series. A receiver (Prometheus) stops; while it is down
// the agent (default queue, disk buffer) is stopped and started again on the
// same buffer; then the receiver comes back. Every cAdvisor sample read
// before the restart and during the outage reaches it with its own
// timestamp: a hollow kubelet stamps each read with the time of the read,
// so the stored series has a sample about every second, with one gap, the
// agent's own restart, and values that agree with their timestamps.
func TestKubeletSeriesThroughOutageAndRestart(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dir := t.TempDir()
	tl := writeKubeletTLS(t, dir)
	node := "kubelet-outage"
	startHollowKubelet(t, client, node, tl)
	t.Cleanup(func() { cleanupNodes(t, client, []string{node}) })
	const ns = "kubelet-outage"
	createNamespace(t, client, ns)
	bindPods(t, client, ns, node, map[string][]string{"web": {"app"}})
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	p, err := testenv.StartPrometheus(ctx, t.TempDir())
	require.NoError(t, err)
	r := promReceiver{p}
	t.Cleanup(r.Stop)
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("e2e-token\n"), 0o600))
	buffer := filepath.Join(dir, "buffer")
	// The default queue; only the buffer is added.
	cfg := newConfig(r.WriteURL())
	cfg.Resources = []string{"nodes"}
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": "kubelet-outage"}
	cfg.Kubelet = newKubelet("direct", tl.caFile)
	cfg.Kubelet.BearerTokenFile = &token
	cfg.RemoteWrite[0] = &remoteWrite{URL: r.WriteURL(), Name: "receiver", DiskBuffer: &diskBuffer{Directory: buffer}}
	endpoint := map[string]string{"endpoint": "receiver"}
	series := fmt.Sprintf(`container_cpu_usage_seconds_total{id="/",node=%q}`, node)
	// stored returns the series' samples at the receiver, in time order.
	stored := func() testenv.ExportedSeries {
		t.Helper()
		got, err := r.RawSamples(ctx, series, 10*time.Minute)
		require.NoError(t, err)
		require.LessOrEqual(t, len(got), 1, "one root series for the node")
		if len(got) == 0 {
			return testenv.ExportedSeries{}
		}
		return got[0]
	}

	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	eventually(t, 60*time.Second, "the node's cAdvisor series delivered", func() error {
		if n := len(stored().Timestamps); n < 3 {
			return fmt.Errorf("%d samples of %s", n, series)
		}
		return nil
	})

	r.Stop()
	down := time.Now()
	// 1 once the node's last read succeeded; 0 before its first read, when
	// the family has no series yet.
	kubeletReads := func(a *testAgent) float64 {
		v, _ := a.metrics(t).sum("kube_state_push_kubelet_read_success", map[string]string{"node": node, "path": "/metrics/cadvisor"})
		return v
	}
	failed := a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint)
	eventually(t, 30*time.Second, "the agent fails to send and buffers", func() error {
		if a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint) <= failed {
			return fmt.Errorf("no failed send yet")
		}
		return nil
	})
	time.Sleep(4 * time.Second) // reads while the receiver is down
	require.Equal(t, 1.0, kubeletReads(a), "the kubelet is read during the outage")
	stopAt := time.Now()
	require.NoError(t, a.stop(), "the agent stops during the outage, its backlog on disk")
	n, err := dirBytes(buffer)
	require.NoError(t, err)
	require.Positive(t, n)
	t.Logf("disk buffer holds %d bytes at the restart", n)

	a.restart(t)
	startAt := time.Now()
	eventually(t, 30*time.Second, "the restarted agent reads the kubelet", func() error {
		if kubeletReads(a) != 1 {
			return fmt.Errorf("no successful read yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // more reads while the receiver is still down
	require.NoError(t, r.Restart(ctx))
	up := time.Now()

	eventually(t, 90*time.Second, "the backlog delivered", func() error {
		if q := a.metric(t, "kube_state_push_remote_queue_length", endpoint); q > 0 {
			return fmt.Errorf("%g samples queued", q)
		}
		ts := stored().Timestamps
		if len(ts) == 0 || ts[len(ts)-1] < up.UnixMilli() {
			return fmt.Errorf("no sample of %s from after the receiver came back", series)
		}
		return nil
	})
	require.NoError(t, a.stop(), "the agent stops with nothing dropped")
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_dropped_total", endpoint), "nothing dropped")

	got := stored()
	ts := got.Timestamps
	count := func(from, to time.Time) int {
		c := 0
		for _, v := range ts {
			if v >= from.UnixMilli() && v < to.UnixMilli() {
				c++
			}
		}
		return c
	}
	before, after := count(down, stopAt), count(startAt, up)
	t.Logf("%s: %d samples stored, %d read by the first agent during the outage, %d by the second before the receiver came back",
		series, len(ts), before, after)
	require.GreaterOrEqual(t, before, 3, "samples read before the restart, during the outage, are stored")
	require.GreaterOrEqual(t, after, 2, "samples read after the restart, during the outage, are stored")
	for i := 1; i < len(ts); i++ {
		// Each sample keeps the kubelet's time of it: the hollow kubelet's
		// root uses half a core, stamped with the same clock reading, so
		// between any two samples the counter grows by half the time
		// between their timestamps. A sample given another time (the
		// snapshot's, a replay's) breaks that.
		dt := float64(ts[i]-ts[i-1]) / 1000
		rate := (got.Values[i] - got.Values[i-1]) / dt
		require.InDelta(t, 0.5, rate, 0.01, "samples %d and %d (%v and %v s apart): not the kubelet's own times", i-1, i, ts[i-1], dt)
		// A sample about every second, from the first to the last; the
		// one gap longer than 3 s is the restart's (the first agent's last
		// read before stopAt, the second's first read after startAt).
		if ts[i]-ts[i-1] <= 3000 {
			continue
		}
		require.True(t, ts[i-1] <= stopAt.UnixMilli() && ts[i-1] >= stopAt.Add(-3*time.Second).UnixMilli() &&
			ts[i] >= startAt.UnixMilli(),
			"a gap of %d ms at %d, not the restart's (stopped %d, started %d): %v", ts[i]-ts[i-1], ts[i-1], stopAt.UnixMilli(), startAt.UnixMilli(), ts)
	}
}
