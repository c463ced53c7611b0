package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// independenceInterval and independenceRun are the snapshot interval and
// how long the dead endpoints are dead in TestDeadEndpointsStallNothing.
const (
	independenceInterval = 2 * time.Second
	independenceRun      = 125 * time.Second
)

// In the default configuration (memory queue, no tuning), three endpoints at
// once: one refusing connections, one answering only after 30 s, and a
// healthy real Prometheus. For more than two minutes the healthy one stores
// every snapshot with a lag of at most one interval, POST /-/reload answers
// within a second throughout, and SIGTERM ends the binary within
// shutdown_timeout, the dead endpoints' queues cut off at that deadline.
func TestDeadEndpointsStallNothing(t *testing.T) {
	needEnv(t)
	clock := startWallClock()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ctx := t.Context()
	ns := "independence"
	createPods(ctx, t, client, ns, "a", "b", "c")
	defer deleteNamespace(t, client, ns)

	deadPort, err := testenv.FreePort() // nothing listens there
	require.NoError(t, err)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(30 * time.Second):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer func() { slow.CloseClientConnections(); slow.Close() }()

	cfg := newConfig("")
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.SnapshotInterval = independenceInterval
	cfg.ExternalLabels = map[string]string{"run": "independence"}
	cfg.RemoteWrite = []*remoteWrite{
		{URL: fmt.Sprintf("http://127.0.0.1:%d/api/v1/write", deadPort), Name: "dead"},
		{URL: slow.URL + "/api/v1/write", Name: "slow"},
		{URL: env.prom.WriteURL(), Name: "healthy"},
	}
	p := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})

	sel := fmt.Sprintf(`kube_pod_info{run="independence",namespace=%q}`, ns)
	var maxLag, maxReload time.Duration
	deadline := time.Now().Add(independenceRun)
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Second)
		start := time.Now()
		code, body := p.reload(t)
		took := time.Since(start)
		require.Equal(t, http.StatusOK, code, body)
		require.Less(t, took, time.Second, "POST /-/reload while two endpoints are dead")
		maxReload = max(maxReload, took)

		asked := time.Now()
		res, err := env.prom.Query(ctx, "max(timestamp("+sel+"))")
		require.NoError(t, err)
		if len(res) == 0 {
			continue // the first snapshot is not in yet
		}
		// Measured from when the query was sent. A healthy endpoint held
		// back by the dead ones falls further behind at every snapshot
		// (the run lasts 60 intervals); one more interval than the
		// snapshot's own age allows a busy machine's late tick or send.
		lag := asked.Sub(time.UnixMilli(int64(res[0].Value * 1000)))
		require.LessOrEqual(t, lag, 2*independenceInterval+time.Second,
			"the healthy endpoint's newest snapshot is at most two intervals old (plus 1s for the send)")
		maxLag = max(maxLag, lag)
	}
	taken := p.metrics(t).single(t, "kube_state_push_snapshot_total")

	stopStart := time.Now()
	_ = p.stop() // non-zero: the dead endpoints' queues are dropped at the deadline
	took := time.Since(stopStart)
	require.Less(t, took, 30*time.Second+5*time.Second, "SIGTERM exits within shutdown_timeout (30s)")
	require.Contains(t, p.logs.String(), "dropping samples: stop deadline passed")

	series, err := env.prom.RawSamples(ctx, sel, 10*time.Minute)
	require.NoError(t, err)
	require.Len(t, series, 3)
	for _, s := range series {
		ts := slices.Clone(s.Timestamps)
		slices.Sort(ts)
		// Every snapshot counted before SIGTERM, but possibly the first
		// (taken before the initial list was stored), and the final one.
		require.GreaterOrEqual(t, len(ts), int(taken), "stored snapshots of %v", s.Metric["pod"])
		for i := 1; i < len(ts); i++ {
			clock.requireGap(t, time.Duration(ts[i]-ts[i-1])*time.Millisecond, 3*independenceInterval/2,
				"no snapshot missing between %d and %d", ts[i-1], ts[i])
		}
	}
	t.Logf("healthy endpoint: %d snapshots stored of %d taken before SIGTERM (+1 final), largest lag %s; slowest reload %s; SIGTERM to exit %s",
		len(series[0].Timestamps), int(taken), maxLag.Round(time.Millisecond), maxReload.Round(time.Millisecond), took.Round(time.Millisecond))
}
