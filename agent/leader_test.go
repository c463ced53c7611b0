package agent

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const leaderRemoteWrite = "remote_write:\n  - url: http://receiver:9090/api/v1/write\n"

// Left out, the block is off and holds the defaults; set, keys left out
// keep theirs, and the namespace and identity come from the pod's env.
func TestLeaderElectionConfig(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("POD_NAME", "")
	cfg, err := Load([]byte(leaderRemoteWrite), "test.yaml")
	require.NoError(t, err)
	require.Equal(t, DefaultLeaderElectionConfig, cfg.LeaderElection)
	require.False(t, cfg.LeaderElection.Enabled)
	require.Equal(t, LeaderElectionConfig{
		LeaseName:     "kube-state-push",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	}, DefaultLeaderElectionConfig)

	t.Setenv("POD_NAMESPACE", "monitoring")
	t.Setenv("POD_NAME", "ksp-abc")
	cfg, err = Load([]byte("leader_election:\n  enabled: true\n  lease_duration: 20s\n"+leaderRemoteWrite), "test.yaml")
	require.NoError(t, err)
	want := DefaultLeaderElectionConfig
	want.Enabled = true
	want.LeaseDuration = 20 * time.Second
	want.LeaseNamespace = "monitoring"
	want.Identity = "ksp-abc"
	require.Equal(t, want, cfg.LeaderElection)

	// Without POD_NAME the identity is the hostname.
	t.Setenv("POD_NAME", "")
	cfg, err = Load([]byte("leader_election: {enabled: true}\n"+leaderRemoteWrite), "test.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, cfg.LeaderElection.Identity)

	// The effective configuration loads again.
	out, err := cfg.Effective()
	require.NoError(t, err)
	require.Contains(t, string(out), "lease_duration: 15s")
	_, err = Load(out, "effective.yaml")
	require.NoError(t, err)
}

// Each bad block gives an error naming its key and line.
func TestLeaderElectionConfigErrors(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("POD_NAME", "")
	for name, tc := range map[string]struct{ block, want string }{
		"no namespace": {
			"  enabled: true\n",
			"test.yaml:1: leader_election.lease_namespace: required when enabled (or set env POD_NAMESPACE)",
		},
		"renew not below lease": {
			"  lease_duration: 10s\n",
			"test.yaml:2: leader_election.lease_duration: 10s must be more than renew_deadline 10s",
		},
		"retry too long": {
			"  retry_period: 9s\n",
			"test.yaml:1: leader_election.renew_deadline: 10s must be more than 1.2 × retry_period 9s",
		},
		"retry zero": {
			"  retry_period: 0s\n",
			"test.yaml:2: leader_election.retry_period: must be positive, not 0s",
		},
		"bad name": {
			"  lease_name: Not_A_Name\n",
			`test.yaml:2: leader_election.lease_name: "Not_A_Name" is not a valid Lease name`,
		},
		"bad namespace": {
			"  enabled: true\n  lease_namespace: a.b\n",
			`test.yaml:3: leader_election.lease_namespace: "a.b" is not a valid namespace`,
		},
		"unknown key": {
			"  lease: x\n",
			"test.yaml:2: leader_election.lease: unknown key",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]byte("leader_election:\n"+tc.block+leaderRemoteWrite), "test.yaml")
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got %q, want prefix %q", err, tc.want)
		})
	}
}

// Two replicas on one Lease: one leads and its gauge says so; when it stops
// it releases the Lease and the other takes over at once, well before
// lease_duration.
func TestLeaderElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kube := fake.NewClientset()
		cfg := DefaultLeaderElectionConfig
		cfg.Enabled, cfg.LeaseNamespace = true, "ns"
		start := func(id string) (*leader, *prometheus.Registry, context.CancelFunc, chan struct{}) {
			c := cfg
			c.Identity = id
			reg := prometheus.NewRegistry()
			l, err := newLeader(c, kube, reg, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); l.run(ctx) }()
			return l, reg, cancel, done
		}
		a, regA, stopA, doneA := start("a")
		time.Sleep(time.Second)
		b, regB, stopB, doneB := start("b")
		time.Sleep(5 * time.Second)
		require.True(t, a.leading())
		require.False(t, b.leading())
		require.NoError(t, testutil.GatherAndCompare(regA, strings.NewReader(leaderGauge(1)), "kube_state_push_leader"))
		require.NoError(t, testutil.GatherAndCompare(regB, strings.NewReader(leaderGauge(0)), "kube_state_push_leader"))

		stopA()
		<-doneA
		require.False(t, a.leading())
		lease, err := kube.CoordinationV1().Leases("ns").Get(t.Context(), "kube-state-push", metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, *lease.Spec.HolderIdentity, "released on stop")

		stopped := time.Now()
		for !b.leading() {
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
