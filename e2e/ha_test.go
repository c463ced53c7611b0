package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// haLeaseDuration and haInterval are the election's and snapshots' timing in the test: short, so failover is quick.
const (
	haLeaseDuration = 3 * time.Second
	haInterval      = time.Second
)

// haAgent is an agent with leader election on, pushing to its own receiver.
// Its stop releases the Lease as well.
type haAgent struct {
	*testAgent
	id      string
	capture *testenv.Capture
}

// Two replicas with leader election produce one stream: only the leader's
// receiver gets snapshots. When the leader stops, it releases the Lease and
// the other takes over with no gap longer than lease_duration plus two
// snapshot intervals, and its snapshots hold the same series (it was a warm
// standby).
func TestHAFailover(t *testing.T) {
	needEnv(t)
	clock := startWallClock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "ha"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "ha")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)

	a := haReplica(t, ctx, ns, "ha-a")
	b := haReplica(t, ctx, ns, "ha-b")
	for _, h := range []*haAgent{a, b} {
		eventually(t, time.Minute, h.id+" ready", func() error {
			if !h.agent.Ready() {
				return fmt.Errorf("not ready")
			}
			return nil
		})
	}

	// Within ~10s one receiver gets snapshots; then, over three more of
	// them, the other still gets none.
	var leader, follower *haAgent
	eventually(t, 10*time.Second, "one receiver gets snapshots", func() error {
		na, nb := len(a.capture.Timestamps()), len(b.capture.Timestamps())
		switch {
		case na > 0 && nb > 0:
			t.Fatalf("both receivers get snapshots: %d and %d", na, nb)
		case na >= 2:
			leader, follower = a, b
		case nb >= 2:
			leader, follower = b, a
		default:
			return fmt.Errorf("%d and %d snapshots", na, nb)
		}
		return nil
	})
	n := len(leader.capture.Timestamps())
	eventually(t, 10*time.Second, "three more snapshots at the leader", func() error {
		if got := len(leader.capture.Timestamps()); got < n+3 {
			return fmt.Errorf("%d more", got-n)
		}
		return nil
	})
	require.Empty(t, follower.capture.Timestamps(), "the follower %s pushes nothing", follower.id)
	require.Equal(t, 1.0, leader.metrics(t).single(t, "kube_state_push_leader"), leader.id)
	require.Equal(t, 0.0, follower.metrics(t).single(t, "kube_state_push_leader"), follower.id)
	t.Logf("%s leads, %s follows", leader.id, follower.id)

	// The leader's last complete snapshot, to compare with the follower's.
	lts := leader.capture.Timestamps()
	before := leader.capture.Series(lts[len(lts)-2])

	// Stop the leader: its final snapshot is queued, then the Lease released.
	require.NoError(t, leader.stop())
	lts = leader.capture.Timestamps()
	last := lts[len(lts)-1]
	maxGap := haLeaseDuration + 2*haInterval
	eventually(t, maxGap+5*time.Second, "the follower takes over", func() error {
		if len(follower.capture.Timestamps()) < 3 {
			return fmt.Errorf("%d snapshots", len(follower.capture.Timestamps()))
		}
		return nil
	})
	fts := follower.capture.Timestamps()
	gap := time.Duration(fts[0]-last) * time.Millisecond
	t.Logf("failover gap: %s between the last sample at %s's receiver and the first at %s's (limit %s)", gap, leader.id, follower.id, maxGap)
	require.Positive(t, gap, "the follower starts after the leader's final snapshot")
	clock.requireGap(t, gap, maxGap)
	require.Equal(t, 1.0, follower.metrics(t).single(t, "kube_state_push_leader"), follower.id)

	// A warm standby: its first complete snapshot holds the same cluster
	// series (its self-metrics differ: they name its own endpoint).
	after := follower.capture.Series(fts[1])
	for _, m := range []map[string]float64{before, after} {
		for k := range m {
			if strings.HasPrefix(k, "kube_state_push_") {
				delete(m, k)
			}
		}
	}
	require.NotEmpty(t, after)
	missing, extra, _ := diffSeries(before, after)
	require.Empty(t, missing, "only before failover")
	require.Empty(t, extra, "only after failover")
}

// haReplica runs an agent with leader election on the Lease ha-ksp in ns,
// as identity id, pushing to a receiver of its own, until the test ends.
func haReplica(t *testing.T, ctx context.Context, ns, id string) *haAgent {
	t.Helper()
	capture := testenv.NewCapture()
	t.Cleanup(capture.Close)
	cfg := haConfig(ns, "ha-ksp", id, 500*time.Millisecond, capture.URL())
	return &haAgent{testAgent: startAgent(t, agentOptions{ctx: ctx, config: cfg}), id: id, capture: capture}
}

// haConfig elects a leader on the Lease lease in ns as identity id, with
// the retry period retry, and pushes the pods and nodes of ns to url.
func haConfig(ns, lease, id string, retry time.Duration, url string) *agentConfig {
	cfg := newConfig(url)
	cfg.SnapshotInterval = haInterval
	cfg.Resources, cfg.Namespaces = []string{"pods", "nodes"}, []string{ns}
	cfg.LeaderElection = &leaderElection{
		Enabled: true, LeaseName: lease, LeaseNamespace: ns, Identity: id,
		LeaseDuration: haLeaseDuration, RenewDeadline: 2 * time.Second, RetryPeriod: retry,
	}
	return cfg
}

// When the leader dies without releasing the Lease (SIGKILL: an OOM kill, a
// node lost), the follower takes over once the Lease expires, and pushes at
// once. Two binaries push to receivers of their own. The gap measured at
// the receivers, from the killed leader's last sample to the follower's
// first, exceeds the usual snapshot interval by at most lease_duration plus
// the follower's two polls of the Lease (to see the last renewal, then to
// acquire it; retry_period with client-go's jitter each) plus its check for
// leadership (retry_period/4). The follower's first snapshot holds the same
// series (a warm standby).
func TestHAFailoverSIGKILL(t *testing.T) {
	needEnv(t)
	clock := startWallClock()
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "ha-kill"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "ha-kill")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)

	const retryPeriod = 500 * time.Millisecond
	type replica struct {
		id   string
		p    *testAgent
		recv *recorder
	}
	start := func(id string) *replica {
		recv := newRecorder(t, nil)
		cfg := haConfig(ns, "ha-kill", id, retryPeriod, recv.URL("/"+id)).noSelfMetrics()
		p := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
		return &replica{id: id, p: p, recv: recv}
	}
	a, b := start("kill-a"), start("kill-b")
	stamps := func(r *replica) []int64 { return r.recv.timestamps("/" + r.id) }

	var leader, follower *replica
	eventually(t, 15*time.Second, "one receiver gets snapshots", func() error {
		na, nb := len(stamps(a)), len(stamps(b))
		switch {
		case na > 0 && nb > 0:
			t.Fatalf("both receivers get snapshots: %d and %d", na, nb)
		case na >= 3:
			leader, follower = a, b
		case nb >= 3:
			leader, follower = b, a
		default:
			return fmt.Errorf("%d and %d snapshots", na, nb)
		}
		return nil
	})
	require.Equal(t, 1.0, leader.p.metrics(t).single(t, "kube_state_push_leader"))
	require.Equal(t, 0.0, follower.p.metrics(t).single(t, "kube_state_push_leader"))
	lts := stamps(leader)
	before := leader.recv.seriesAt("/"+leader.id, lts[len(lts)-2])

	leader.p.kill()
	killed := time.Now()
	lts = stamps(leader)
	last := lts[len(lts)-1]
	// The follower's polls of the Lease are retry_period apart, stretched
	// by up to client-go's JitterFactor (1.2).
	poll := retryPeriod + time.Duration(leaderelection.JitterFactor*float64(retryPeriod))
	maxGap := haInterval + haLeaseDuration + 2*poll + retryPeriod/4
	eventually(t, maxGap+10*time.Second, "the follower takes over", func() error {
		if n := len(stamps(follower)); n < 3 {
			return fmt.Errorf("%d snapshots", n)
		}
		return nil
	})
	fts := stamps(follower)
	gap := time.Duration(fts[0]-last) * time.Millisecond
	t.Logf("failover after SIGKILL: %s between the killed leader's last sample and the follower's first (%s after the kill; lease_duration %s, limit %s)",
		gap, time.UnixMilli(fts[0]).Sub(killed).Round(time.Millisecond), haLeaseDuration, maxGap)
	require.Greater(t, gap, haInterval, "the Lease was not released: the follower waited for it to expire")
	clock.requireGap(t, gap, maxGap)
	require.Equal(t, 1.0, follower.p.metrics(t).single(t, "kube_state_push_leader"))

	after := follower.recv.seriesAt("/"+follower.id, fts[0])
	require.NotEmpty(t, after)
	require.Equal(t, before, after, "the follower's first snapshot holds the leader's series")
	require.NoError(t, follower.p.stop())
}
