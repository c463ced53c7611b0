package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v1Header is the HELP and TYPE of every v1 family, as kube-state-metrics
// v1.9.8 prints them (internal/store/node_test.go and pod_test.go at
// v1.9.8): no stability prefix, all gauges.
const v1Header = `
# HELP kube_node_status_allocatable_cpu_cores The CPU resources of a node that are available for scheduling.
# HELP kube_node_status_allocatable_memory_bytes The memory resources of a node that are available for scheduling.
# HELP kube_node_status_allocatable_pods The pod resources of a node that are available for scheduling.
# HELP kube_node_status_capacity_cpu_cores The total CPU resources of the node.
# HELP kube_node_status_capacity_memory_bytes The total memory resources of the node.
# HELP kube_node_status_capacity_pods The total pod resources of the node.
# HELP kube_pod_container_resource_limits_cpu_cores The limit on cpu cores to be used by a container.
# HELP kube_pod_container_resource_limits_memory_bytes The limit on memory to be used by a container in bytes.
# HELP kube_pod_container_resource_requests_cpu_cores The number of requested cpu cores by a container.
# HELP kube_pod_container_resource_requests_memory_bytes The number of requested memory bytes by a container.
# TYPE kube_node_status_allocatable_cpu_cores gauge
# TYPE kube_node_status_allocatable_memory_bytes gauge
# TYPE kube_node_status_allocatable_pods gauge
# TYPE kube_node_status_capacity_cpu_cores gauge
# TYPE kube_node_status_capacity_memory_bytes gauge
# TYPE kube_node_status_capacity_pods gauge
# TYPE kube_pod_container_resource_limits_cpu_cores gauge
# TYPE kube_pod_container_resource_limits_memory_bytes gauge
# TYPE kube_pod_container_resource_requests_cpu_cores gauge
# TYPE kube_pod_container_resource_requests_memory_bytes gauge
`

func TestLegacyV1Metadata(t *testing.T) {
	var got string
	for _, r := range []*Resource{podResource(), nodeResource()} {
		for _, f := range r.Families(FamilyOptions{LegacyV1: []string{legacyAll}}) {
			if !isLegacyV1(f.Name) {
				continue
			}
			help := f.Help
			if f.Stability == Stable {
				help = "[STABLE] " + help // how the agent's metadata prints it
			}
			require.False(t, f.OptIn, f.Name)
			got += "# HELP " + f.Name + " " + help + "\n# TYPE " + f.Name + " " + f.Type.String() + "\n"
		}
	}
	requireGolden(t, v1Header, got)
	require.Len(t, LegacyV1Families(), 10)
}

func isLegacyV1(name string) bool {
	for _, n := range LegacyV1Families() {
		if n == name {
			return true
		}
	}
	return false
}

// A v1 family left off the list is not even built, and no default family
// changes with the list.
func TestLegacyV1OffByDefault(t *testing.T) {
	for _, r := range []*Resource{podResource(), nodeResource()} {
		base := r.Families(FamilyOptions{})
		for _, f := range base {
			require.False(t, isLegacyV1(f.Name), f.Name)
		}
		one := r.Families(FamilyOptions{LegacyV1: []string{"kube_node_status_capacity_pods"}})
		all := r.Families(FamilyOptions{LegacyV1: []string{legacyAll}})
		require.Equal(t, base, all[:len(base)], "v1 families come after the v2 ones")
		if r.Name == "nodes" {
			require.Len(t, one, len(base)+1)
			require.Equal(t, "kube_node_status_capacity_pods", one[len(base)].Name)
			require.Len(t, all, len(base)+6)
		} else {
			require.Equal(t, base, one)
			require.Len(t, all, len(base)+4)
		}
	}
}

// kube-state-metrics v1.9.8's own node case (internal/store/node_test.go):
// the v1 families next to kube_node_status_capacity and _allocatable.
func TestLegacyV1Node(t *testing.T) {
	n := testNode("127.0.0.1")
	n.Status.Capacity = v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("4.3"),
		v1.ResourceMemory:           resource.MustParse("2G"),
		v1.ResourcePods:             resource.MustParse("1000"),
		v1.ResourceStorage:          resource.MustParse("3G"),
		v1.ResourceEphemeralStorage: resource.MustParse("4G"),
		"nvidia.com/gpu":            resource.MustParse("4"),
	}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("3"),
		v1.ResourceMemory:           resource.MustParse("1G"),
		v1.ResourcePods:             resource.MustParse("555"),
		v1.ResourceStorage:          resource.MustParse("2G"),
		v1.ResourceEphemeralStorage: resource.MustParse("3G"),
		"nvidia.com/gpu":            resource.MustParse("1"),
	}
	opts := FamilyOptions{LegacyV1: []string{legacyAll}}
	requireGolden(t, `
kube_node_status_allocatable_cpu_cores{node="127.0.0.1"} 3
kube_node_status_allocatable_memory_bytes{node="127.0.0.1"} 1e+09
kube_node_status_allocatable_pods{node="127.0.0.1"} 555
kube_node_status_capacity_cpu_cores{node="127.0.0.1"} 4.3
kube_node_status_capacity_memory_bytes{node="127.0.0.1"} 2e+09
kube_node_status_capacity_pods{node="127.0.0.1"} 1000
`, renderText(t, nodeResource(), opts, n, LegacyV1Families()...))

	t.Run("unset resources have no series", func(t *testing.T) {
		requireGolden(t, "", renderText(t, nodeResource(), opts, testNode("bare"), LegacyV1Families()...))
	})
	t.Run("memory in milli-units, as v1.9.8 reads it", func(t *testing.T) {
		m := testNode("m")
		m.Status.Capacity = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1500m")}
		requireGolden(t, `kube_node_status_capacity_memory_bytes{node="m"} 1.5`,
			renderText(t, nodeResource(), opts, m, LegacyV1Families()...))
	})
}

// kube-state-metrics v1.9.8's own pod cases (internal/store/pod_test.go):
// namespace, pod, container and node, no uid; init containers and other
// resources have no v1 series; the v2 families next to them keep the uid.
func TestLegacyV1Pod(t *testing.T) {
	res := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	con1 := res("200m", "100M")
	con1[v1.ResourceEphemeralStorage] = resource.MustParse("300M")
	con1[v1.ResourceStorage] = resource.MustParse("400M")
	con1["nvidia.com/gpu"] = resource.MustParse("1")
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod1", Namespace: "ns1", UID: "uid1"},
		Spec: v1.PodSpec{
			NodeName: "node1",
			Containers: []v1.Container{
				{Name: "pod1_con1", Resources: v1.ResourceRequirements{Requests: con1, Limits: con1}},
				{Name: "pod1_con2", Resources: v1.ResourceRequirements{Requests: res("300m", "200M"), Limits: res("300m", "200M")}},
				{Name: "pod1_con3"},
				{Name: "pod1_con4", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1500m")}}},
			},
			InitContainers: []v1.Container{
				{Name: "pod1_initcon1", Resources: v1.ResourceRequirements{Requests: con1, Limits: con1}},
			},
		},
	}
	opts := FamilyOptions{LegacyV1: []string{legacyAll}}
	names := append(LegacyV1Families(), "kube_pod_container_resource_requests")
	requireGolden(t, `
kube_pod_container_resource_limits_cpu_cores{container="pod1_con1",namespace="ns1",node="node1",pod="pod1"} 0.2
kube_pod_container_resource_limits_cpu_cores{container="pod1_con2",namespace="ns1",node="node1",pod="pod1"} 0.3
kube_pod_container_resource_limits_memory_bytes{container="pod1_con1",namespace="ns1",node="node1",pod="pod1"} 1e+08
kube_pod_container_resource_limits_memory_bytes{container="pod1_con2",namespace="ns1",node="node1",pod="pod1"} 2e+08
kube_pod_container_resource_requests_cpu_cores{container="pod1_con1",namespace="ns1",node="node1",pod="pod1"} 0.2
kube_pod_container_resource_requests_cpu_cores{container="pod1_con2",namespace="ns1",node="node1",pod="pod1"} 0.3
kube_pod_container_resource_requests_memory_bytes{container="pod1_con1",namespace="ns1",node="node1",pod="pod1"} 1e+08
kube_pod_container_resource_requests_memory_bytes{container="pod1_con2",namespace="ns1",node="node1",pod="pod1"} 2e+08
kube_pod_container_resource_requests_memory_bytes{container="pod1_con4",namespace="ns1",node="node1",pod="pod1"} 2
kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",node="node1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.2
kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",node="node1",pod="pod1",resource="ephemeral_storage",uid="uid1",unit="byte"} 3e+08
kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",node="node1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 1e+08
kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",node="node1",pod="pod1",resource="nvidia_com_gpu",uid="uid1",unit="integer"} 1
kube_pod_container_resource_requests{container="pod1_con1",namespace="ns1",node="node1",pod="pod1",resource="storage",uid="uid1",unit="byte"} 4e+08
kube_pod_container_resource_requests{container="pod1_con2",namespace="ns1",node="node1",pod="pod1",resource="cpu",uid="uid1",unit="core"} 0.3
kube_pod_container_resource_requests{container="pod1_con2",namespace="ns1",node="node1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 2e+08
kube_pod_container_resource_requests{container="pod1_con4",namespace="ns1",node="node1",pod="pod1",resource="memory",uid="uid1",unit="byte"} 2
`, renderText(t, podResource(), opts, p, names...))

	t.Run("unscheduled pod has no node label", func(t *testing.T) {
		q := p.DeepCopy()
		q.Spec.NodeName = ""
		q.Spec.Containers = q.Spec.Containers[1:2]
		requireGolden(t, `
kube_pod_container_resource_limits_cpu_cores{container="pod1_con2",namespace="ns1",pod="pod1"} 0.3
kube_pod_container_resource_limits_memory_bytes{container="pod1_con2",namespace="ns1",pod="pod1"} 2e+08
kube_pod_container_resource_requests_cpu_cores{container="pod1_con2",namespace="ns1",pod="pod1"} 0.3
kube_pod_container_resource_requests_memory_bytes{container="pod1_con2",namespace="ns1",pod="pod1"} 2e+08
`, renderText(t, podResource(), opts, q, LegacyV1Families()...))
	})
}

func TestLegacyV1Validate(t *testing.T) {
	for _, c := range []struct {
		list []string
		err  string
	}{
		{nil, ""},
		{[]string{"*"}, ""},
		{LegacyV1Families(), ""},
		{[]string{"kube_node_status_capacity_pods", "kube_pod_container_resource_requests"}, `legacy_v1_families[1]: unknown v1 family "kube_pod_container_resource_requests"`},
		{[]string{"kube_node_status_capacity_pods", "kube_node_status_capacity_pods"}, `legacy_v1_families[1]: family "kube_node_status_capacity_pods" is listed twice`},
		{[]string{"kube_node_status_capacity_.*"}, `legacy_v1_families[0]: unknown v1 family`},
	} {
		cfg := Config{LegacyV1Families: c.list}
		err := cfg.Validate()
		if c.err == "" {
			require.NoError(t, err, c.list)
			continue
		}
		require.ErrorContains(t, err, c.err)
	}
}
