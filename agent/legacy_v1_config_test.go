package agent

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/config"
)

// The v1 families are off by default; listed, they are selected, get their
// v1 metadata (HELP without a stability prefix) and change the group key, so
// a reload re-renders the resource.
func TestLegacyV1FamiliesConfig(t *testing.T) {
	const rw = "remote_write:\n  - url: http://receiver:9090/api/v1/write\n"
	off, err := config.Load([]byte("resources: [pods, nodes]\n"+rw), "legacy.yaml")
	require.NoError(t, err)
	md := familyMetadata(off)
	require.NotContains(t, md, "kube_node_status_capacity_cpu_cores")
	require.NotContains(t, md, "kube_pod_container_resource_requests_cpu_cores")

	on, err := config.Load([]byte("resources: [pods, nodes]\nlegacy_v1_families: [kube_node_status_capacity_cpu_cores]\n"+rw), "legacy.yaml")
	require.NoError(t, err)
	md = familyMetadata(on)
	require.Contains(t, md, "kube_node_status_capacity_cpu_cores")
	require.Equal(t, "The total CPU resources of the node.", md["kube_node_status_capacity_cpu_cores"].Help)
	require.NotContains(t, md, "kube_node_status_capacity_pods")
	require.NotContains(t, md, "kube_pod_container_resource_requests_cpu_cores")

	all, err := config.Load([]byte("resources: [pods, nodes]\nlegacy_v1_families: [\"*\"]\n"+rw), "legacy.yaml")
	require.NoError(t, err)
	md = familyMetadata(all)
	require.Contains(t, md, "kube_pod_container_resource_limits_memory_bytes")
	require.Contains(t, md, "kube_node_status_allocatable_pods")

	d := diffConfigs(off, on, func(c *config.Config) (int, int) { return c.Watch.Shard, c.Watch.TotalShards })
	require.Equal(t, []string{"nodes"}, d.resourcesChanged)
	require.True(t, d.metadataChanged)
}
