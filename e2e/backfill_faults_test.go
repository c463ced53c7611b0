package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// backfill_resolution with faults in combination, on the binary with
// defaults for everything else: one endpoint (disk buffer, thinning) has
// its receiver down while another endpoint stays healthy, and the agent is
// killed with SIGKILL and started again on the same directory during the
// outage. The healthy receiver misses only the restart; once the other
// receiver is back, the backlog of both runs arrives thinned: every series
// of a steady pod has a sample at least every step over the outage, fewer
// than in full, and nothing is dropped.
func TestBackfillDeadEndpointRestart(t *testing.T) {
	needEnv(t)
	needBinary(t, "victoria-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, step = "backfill-faults", 4 * time.Second
	createPods(ctx, t, client, ns, "steady-1", "steady-2")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	vmEdge, vmHealthy := startVM(t), startVM(t)
	proxy := startProxy(t, vmEdge.WriteURL())
	cfg := newConfig("").noSelfMetrics()
	cfg.SnapshotInterval = time.Second // the only tuning: a short test
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	edge := newEndpoint("edge", proxy.URL())
	edge.DiskBuffer = &diskBuffer{Directory: filepath.Join(t.TempDir(), "edge")}
	edge.Extra = map[string]any{"backfill_resolution": step.String()}
	cfg.RemoteWrite = []*remoteWrite{edge, newEndpoint("healthy", vmHealthy.WriteURL())}

	first := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	for _, e := range []string{"edge", "healthy"} {
		first.waitDelivered(t, map[string]string{"endpoint": e}, 3)
	}
	proxy.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	down := time.Now()
	time.Sleep(6 * step)
	first.kill()
	killed := time.Now()
	second := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	restarted := time.Since(killed)
	time.Sleep(6 * step)
	proxy.SetRules() // forward again
	up := time.Now()
	eventually(t, time.Minute, "the edge backlog delivered", func() error {
		if q := second.metric(t, "kube_state_push_remote_queue_length", map[string]string{"endpoint": "edge"}); q > 0 {
			return fmt.Errorf("%g samples queued", q)
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	thinned := second.metric(t, "kube_state_push_remote_samples_thinned_total", map[string]string{"endpoint": "edge"})
	for _, e := range []string{"edge", "healthy"} {
		require.Zero(t, second.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": e}), "dropped by %s", e)
	}
	require.NoError(t, second.stop())

	// samples returns the timestamps of a steady pod's kube_pod_info
	// within the outage.
	samples := func(vm *testenv.VictoriaMetrics) []int64 {
		series, err := vm.Export(ctx, fmt.Sprintf(`kube_pod_info{namespace=%q,pod="steady-1"}`, ns))
		require.NoError(t, err)
		require.Len(t, series, 1, "one series of the steady pod")
		var out []int64
		for i, ts := range series[0].Timestamps {
			require.False(t, math.IsNaN(series[0].Values[i]), "no staleness marker for a pod that stayed")
			if ts >= down.UnixMilli() && ts <= up.UnixMilli() {
				out = append(out, ts)
			}
		}
		return out
	}
	longest := func(ts []int64) time.Duration {
		var g int64
		for i := 1; i < len(ts); i++ {
			g = max(g, ts[i]-ts[i-1])
		}
		return time.Duration(g) * time.Millisecond
	}
	healthy, thin := samples(vmHealthy), samples(vmEdge)
	restartGap := longest(healthy)
	t.Logf("healthy endpoint: %d samples of the steady pod over the %s outage, longest gap %s (ready %s after the kill)",
		len(healthy), up.Sub(down).Round(time.Second), restartGap, restarted.Round(100*time.Millisecond))
	t.Logf("edge endpoint, thinned: %d samples of it over the outage, longest gap %s; %g samples thinned by the second run",
		len(thin), longest(thin), thinned)
	require.NotEmpty(t, thin)
	// Both runs' backlogs, the first run's replayed by the second: the
	// steady series keeps a sample at least every step, or across the
	// restart, whichever is longer.
	require.LessOrEqual(t, longest(thin), max(step+time.Second, restartGap+time.Second), "a sample at least every step")
	require.Less(t, len(thin), len(healthy), "fewer samples than in full")
	require.Positive(t, thinned, "the second run thinned the backlog")
	require.Less(t, thin[0]-down.UnixMilli(), (step + time.Second).Milliseconds(), "the outage's start is covered")
	require.Less(t, up.UnixMilli()-thin[len(thin)-1], (step + 2*time.Second).Milliseconds(), "the outage's end is covered")
}
