package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/leader"
)

const leaderRemoteWrite = "remote_write:\n  - url: http://receiver:9090/api/v1/write\n"

// Left out, the block is off and holds the defaults; set, keys left out
// keep theirs, and the namespace and identity come from the pod's env.
func TestLeaderElectionConfig(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("POD_NAME", "")
	cfg, err := Load([]byte(leaderRemoteWrite), "test.yaml")
	require.NoError(t, err)
	require.Equal(t, leader.DefaultConfig, cfg.LeaderElection)
	require.False(t, cfg.LeaderElection.Enabled)
	require.Equal(t, leader.Config{
		LeaseName:     "kube-state-push",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	}, leader.DefaultConfig)

	t.Setenv("POD_NAMESPACE", "monitoring")
	t.Setenv("POD_NAME", "ksp-abc")
	cfg, err = Load([]byte("leader_election:\n  enabled: true\n  lease_duration: 20s\n"+leaderRemoteWrite), "test.yaml")
	require.NoError(t, err)
	want := leader.DefaultConfig
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
