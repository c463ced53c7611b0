package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v1Header is the HELP and TYPE of every v1 family, as kube-state-metrics
// v1.9.8 prints them (internal/store/node_test.go and pod_test.go at
// v1.9.8, and daemonset.go, hpa_test.go): no stability prefix, all gauges.
const v1Header = `
# HELP kube_endpoint_address_available Number of addresses available in endpoint.
# HELP kube_endpoint_address_not_ready Number of addresses not ready in endpoint
# TYPE kube_endpoint_address_available gauge
# TYPE kube_endpoint_address_not_ready gauge
# HELP kube_daemonset_updated_number_scheduled The total number of nodes that are running updated daemon pod
# HELP kube_hpa_labels Kubernetes labels converted to Prometheus labels.
# HELP kube_hpa_metadata_generation The generation observed by the HorizontalPodAutoscaler controller.
# HELP kube_hpa_spec_max_replicas Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.
# HELP kube_hpa_spec_min_replicas Lower limit for the number of pods that can be set by the autoscaler, default 1.
# HELP kube_hpa_status_condition The condition of this autoscaler.
# HELP kube_hpa_status_current_replicas Current number of replicas of pods managed by this autoscaler.
# HELP kube_hpa_status_desired_replicas Desired number of replicas of pods managed by this autoscaler.
# HELP kube_node_status_phase The phase the node is currently in.
# TYPE kube_daemonset_updated_number_scheduled gauge
# TYPE kube_hpa_labels gauge
# TYPE kube_hpa_metadata_generation gauge
# TYPE kube_hpa_spec_max_replicas gauge
# TYPE kube_hpa_spec_min_replicas gauge
# TYPE kube_hpa_status_condition gauge
# TYPE kube_hpa_status_current_replicas gauge
# TYPE kube_hpa_status_desired_replicas gauge
# TYPE kube_node_status_phase gauge
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
	for _, r := range All() {
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
	require.Len(t, LegacyV1Families(), 21)
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
	added := map[string]int{"pods": 4, "nodes": 7, "daemonsets": 1, "horizontalpodautoscalers": 7, "endpoints": 2}
	for _, r := range All() {
		base := r.Families(FamilyOptions{})
		for _, f := range base {
			require.False(t, isLegacyV1(f.Name), f.Name)
		}
		one := r.Families(FamilyOptions{LegacyV1: []string{"kube_node_status_capacity_pods"}})
		all := r.Families(FamilyOptions{LegacyV1: []string{legacyAll}})
		require.Equal(t, base, all[:len(base)], "v1 families come after the v2 ones")
		require.Len(t, all, len(base)+added[r.Name], r.Name)
		if r.Name == "nodes" {
			require.Len(t, one, len(base)+1)
			require.Equal(t, "kube_node_status_capacity_pods", one[len(base)].Name)
		} else {
			require.Equal(t, base, one)
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
	t.Run("phase, when the deprecated status.phase is set", func(t *testing.T) {
		p := testNode("127.0.0.1")
		p.Status.Phase = v1.NodeRunning
		requireGolden(t, `
kube_node_status_phase{node="127.0.0.1",phase="Terminated"} 0
kube_node_status_phase{node="127.0.0.1",phase="Running"} 1
kube_node_status_phase{node="127.0.0.1",phase="Pending"} 0
`, renderText(t, nodeResource(), opts, p, LegacyV1Families()...))
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

// kube-state-metrics v1.9.8's hpa1 case (internal/store/hpa_test.go), less
// kube_hpa_spec_target_metric, which is not rendered.
func TestLegacyV1HPA(t *testing.T) {
	minReplicas := int32(2)
	a := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Generation: 2, Name: "hpa1", Namespace: "ns1", UID: "uid-hpa1", Labels: map[string]string{"app": "foobar"}},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 4, MinReplicas: &minReplicas},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 2, DesiredReplicas: 2,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: v1.ConditionTrue, Reason: "reason"}},
		},
	}
	opts := FamilyOptions{LegacyV1: []string{legacyAll}}
	requireGolden(t, `
kube_hpa_labels{hpa="hpa1",label_app="foobar",namespace="ns1"} 1
kube_hpa_metadata_generation{hpa="hpa1",namespace="ns1"} 2
kube_hpa_spec_max_replicas{hpa="hpa1",namespace="ns1"} 4
kube_hpa_spec_min_replicas{hpa="hpa1",namespace="ns1"} 2
kube_hpa_status_condition{condition="AbleToScale",hpa="hpa1",namespace="ns1",status="false"} 0
kube_hpa_status_condition{condition="AbleToScale",hpa="hpa1",namespace="ns1",status="true"} 1
kube_hpa_status_condition{condition="AbleToScale",hpa="hpa1",namespace="ns1",status="unknown"} 0
kube_hpa_status_current_replicas{hpa="hpa1",namespace="ns1"} 2
kube_hpa_status_desired_replicas{hpa="hpa1",namespace="ns1"} 2
kube_horizontalpodautoscaler_spec_max_replicas{horizontalpodautoscaler="hpa1",namespace="ns1"} 4
`, renderText(t, hpaResource(), opts, a, append(LegacyV1Families(), "kube_horizontalpodautoscaler_spec_max_replicas")...))

	a.Spec.MinReplicas = nil
	requireGolden(t, "",
		renderText(t, hpaResource(), opts, a, "kube_hpa_spec_min_replicas"))
}

func TestLegacyV1DaemonSet(t *testing.T) {
	d := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds1", Namespace: "ns1", UID: "uid-ds1"},
		Status:     appsv1.DaemonSetStatus{UpdatedNumberScheduled: 3},
	}
	requireGolden(t, `kube_daemonset_updated_number_scheduled{daemonset="ds1",namespace="ns1"} 3`,
		renderText(t, daemonSetResource(), FamilyOptions{LegacyV1: []string{"kube_daemonset_updated_number_scheduled"}}, d, LegacyV1Families()...))
}

// kube-state-metrics v1.9.8's own endpoints case
// (internal/store/endpoint_test.go): each address counts once per port.
func TestLegacyV1Endpoints(t *testing.T) {
	ep := &coreEndpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "test-endpoint", Namespace: "default", UID: "uid-ep"},
		Subsets: []v1.EndpointSubset{ //nolint:staticcheck // deprecated API, still exported by kube-state-metrics
			{Addresses: []coreEndpointAddress{{IP: "127.0.0.1"}, {IP: "10.0.0.1"}}, Ports: []coreEndpointPort{{Port: 8080}, {Port: 8081}}},
			{Addresses: []coreEndpointAddress{{IP: "172.22.23.202"}}, Ports: []coreEndpointPort{{Port: 8443}, {Port: 9090}}},
			{NotReadyAddresses: []coreEndpointAddress{{IP: "192.168.1.1"}}, Ports: []coreEndpointPort{{Port: 1234}, {Port: 5678}}},
			{NotReadyAddresses: []coreEndpointAddress{{IP: "192.168.1.3"}, {IP: "192.168.2.2"}}, Ports: []coreEndpointPort{{Port: 1234}, {Port: 5678}}},
		},
	}
	opts := FamilyOptions{LegacyV1: []string{legacyAll}}
	requireGolden(t, `
kube_endpoint_address_available{endpoint="test-endpoint",namespace="default"} 6
kube_endpoint_address_not_ready{endpoint="test-endpoint",namespace="default"} 6
`, renderText(t, endpointsResource(), opts, ep, LegacyV1Families()...))
	requireGolden(t, `
kube_endpoint_address_available{endpoint="empty",namespace="default"} 0
kube_endpoint_address_not_ready{endpoint="empty",namespace="default"} 0
`, renderText(t, endpointsResource(), opts, &coreEndpoints{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default", UID: "u"}}, LegacyV1Families()...))
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
