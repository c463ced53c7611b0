package leader

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Two replicas on one Lease: one leads and its gauge says so; when it stops
// it releases the Lease and the other takes over at once, well before
// lease_duration.
func TestLeaderElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kube := fake.NewClientset()
		cfg := DefaultConfig
		cfg.Enabled, cfg.LeaseNamespace = true, "ns"
		start := func(id string) (*Election, *prometheus.Registry, context.CancelFunc, chan struct{}) {
			c := cfg
			c.Identity = id
			reg := prometheus.NewRegistry()
			e, err := New(c, kube, reg, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); e.Run(ctx) }()
			return e, reg, cancel, done
		}
		a, regA, stopA, doneA := start("a")
		time.Sleep(time.Second)
		b, regB, stopB, doneB := start("b")
		time.Sleep(5 * time.Second)
		require.True(t, a.Leading())
		require.False(t, b.Leading())
		require.NoError(t, testutil.GatherAndCompare(regA, strings.NewReader(leaderGauge(1)), "kube_state_push_leader"))
		require.NoError(t, testutil.GatherAndCompare(regB, strings.NewReader(leaderGauge(0)), "kube_state_push_leader"))

		stopA()
		<-doneA
		require.False(t, a.Leading())
		lease, err := kube.CoordinationV1().Leases("ns").Get(t.Context(), "kube-state-push", metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, *lease.Spec.HolderIdentity, "released on stop")

		stopped := time.Now()
		for !b.Leading() {
			time.Sleep(100 * time.Millisecond)
		}
		require.Less(t, time.Since(stopped), cfg.LeaseDuration, "a released Lease is taken over within retry_period")
		require.NoError(t, testutil.GatherAndCompare(regB, strings.NewReader(leaderGauge(1)), "kube_state_push_leader"))
		stopB()
		<-doneB
	})
}

func leaderGauge(v int) string {
	return "# HELP kube_state_push_leader 1 while this replica holds the leader election Lease and pushes, 0 otherwise.\n" +
		"# TYPE kube_state_push_leader gauge\n" +
		"kube_state_push_leader " + string(rune('0'+v)) + "\n"
}
