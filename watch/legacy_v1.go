package watch

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The families of kube-state-metrics v1.9.8 that v2 renamed or dropped,
// rendered only when the configuration's legacy_v1_families names them
//: saved dashboards and alerts (Grafana 13105 among them)
// still query them. Names, HELP, TYPE, labels and values are v1.9.8's
// (internal/store/*.go at tag v1.9.8); v1 had no stability
// levels, so their HELP carries no prefix. v2's replacements carry the
// resource in `resource` and `unit` labels:
//
//	kube_pod_container_resource_{requests,limits}_cpu_cores     = kube_pod_container_resource_{requests,limits}{resource="cpu",unit="core"}
//	kube_pod_container_resource_{requests,limits}_memory_bytes  = kube_pod_container_resource_{requests,limits}{resource="memory",unit="byte"}
//	kube_node_status_{capacity,allocatable}_cpu_cores           = kube_node_status_{capacity,allocatable}{resource="cpu",unit="core"}
//	kube_node_status_{capacity,allocatable}_memory_bytes        = kube_node_status_{capacity,allocatable}{resource="memory",unit="byte"}
//	kube_node_status_{capacity,allocatable}_pods                = kube_node_status_{capacity,allocatable}{resource="pods",unit="integer"}
//	kube_daemonset_updated_number_scheduled                     = kube_daemonset_status_updated_number_scheduled
//	kube_hpa_{metadata_generation,spec_max_replicas,spec_min_replicas,
//	  status_current_replicas,status_desired_replicas,labels,status_condition}
//	                                                            = kube_horizontalpodautoscaler_<same>, label hpa for horizontalpodautoscaler
//
// minus the pod's uid label, which v1 did not have. kube_node_status_phase
// (from the deprecated status.phase) and kube_endpoint_address_available and
// _not_ready (address counts, times the subset's ports) have no v2
// counterpart.

// legacyAll in legacy_v1_families selects every v1 family.
const legacyAll = "*"

// LegacyV1Families returns the names of the v1 families the agent can
// render, for validation and documentation.
func LegacyV1Families() []string {
	var names []string
	for _, f := range podLegacyV1Families() {
		names = append(names, f.Name)
	}
	for _, f := range nodeLegacyV1Families() {
		names = append(names, f.Name)
	}
	for _, f := range daemonSetLegacyV1Families() {
		names = append(names, f.Name)
	}
	for _, f := range hpaLegacyV1Families() {
		names = append(names, f.Name)
	}
	for _, f := range endpointsLegacyV1Families() {
		names = append(names, f.Name)
	}
	return names
}

// legacyV1 returns those of fs that the options name, so a family left off
// the list is neither built nor rendered.
func legacyV1[T any](o FamilyOptions, fs func() []Family[T]) []Family[T] {
	if len(o.LegacyV1) == 0 {
		return nil
	}
	all := slices.Contains(o.LegacyV1, legacyAll)
	var out []Family[T]
	for _, f := range fs() {
		if all || slices.Contains(o.LegacyV1, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// podV1Identity is the number of a pod's identity labels v1 had: namespace
// and pod, not uid.
const podV1Identity = 2

// podLegacyV1Families are v1.9.8's per-container resource families, in its
// order: one series per regular container that sets the resource, labelled
// container and node.
func podLegacyV1Families() []Family[*v1.Pod] {
	fam := func(name, help string, list func(*v1.Container) v1.ResourceList, res v1.ResourceName, value func(q *resource.Quantity) float64) Family[*v1.Pod] {
		return Family[*v1.Pod]{
			Name: name, Help: help, Type: Gauge, Stability: Alpha, IdentityLabels: podV1Identity,
			Generate: func(p *v1.Pod, e *Emitter) {
				for i := range p.Spec.Containers {
					c := &p.Spec.Containers[i]
					if q, ok := list(c)[res]; ok {
						e.Emit(value(&q), "container", c.Name, "node", p.Spec.NodeName)
					}
				}
			},
		}
	}
	requests := func(c *v1.Container) v1.ResourceList { return c.Resources.Requests }
	limits := func(c *v1.Container) v1.ResourceList { return c.Resources.Limits }
	cores := func(q *resource.Quantity) float64 { return float64(q.MilliValue()) / 1000 }
	bytes := func(q *resource.Quantity) float64 { return float64(q.Value()) }
	return []Family[*v1.Pod]{
		fam("kube_pod_container_resource_requests_cpu_cores", "The number of requested cpu cores by a container.", requests, v1.ResourceCPU, cores),
		fam("kube_pod_container_resource_requests_memory_bytes", "The number of requested memory bytes by a container.", requests, v1.ResourceMemory, bytes),
		fam("kube_pod_container_resource_limits_cpu_cores", "The limit on cpu cores to be used by a container.", limits, v1.ResourceCPU, cores),
		fam("kube_pod_container_resource_limits_memory_bytes", "The limit on memory to be used by a container in bytes.", limits, v1.ResourceMemory, bytes),
	}
}

// nodeLegacyV1Families are v1.9.8's per-resource node capacity and
// allocatable families, in its order: one series without labels of their
// own when the node reports the resource. v1.9.8 reads every one, memory
// included, as MilliValue()/1000.
func nodeLegacyV1Families() []Family[*v1.Node] {
	fam := func(name, help string, list func(*v1.Node) v1.ResourceList, res v1.ResourceName) Family[*v1.Node] {
		return Family[*v1.Node]{
			Name: name, Help: help, Type: Gauge, Stability: Alpha,
			Generate: func(n *v1.Node, e *Emitter) {
				if q, ok := list(n)[res]; ok {
					e.Emit(float64(q.MilliValue()) / 1000)
				}
			},
		}
	}
	capacity := func(n *v1.Node) v1.ResourceList { return n.Status.Capacity }
	allocatable := func(n *v1.Node) v1.ResourceList { return n.Status.Allocatable }
	return []Family[*v1.Node]{
		{
			Name: "kube_node_status_phase", Help: "The phase the node is currently in.", Type: Gauge, Stability: Alpha,
			Generate: func(n *v1.Node, e *Emitter) {
				if p := n.Status.Phase; p != "" {
					for _, ph := range []v1.NodePhase{v1.NodePending, v1.NodeRunning, v1.NodeTerminated} {
						e.Emit(boolFloat64(p == ph), "phase", string(ph))
					}
				}
			},
		},
		fam("kube_node_status_capacity_pods", "The total pod resources of the node.", capacity, v1.ResourcePods),
		fam("kube_node_status_capacity_cpu_cores", "The total CPU resources of the node.", capacity, v1.ResourceCPU),
		fam("kube_node_status_capacity_memory_bytes", "The total memory resources of the node.", capacity, v1.ResourceMemory),
		fam("kube_node_status_allocatable_pods", "The pod resources of a node that are available for scheduling.", allocatable, v1.ResourcePods),
		fam("kube_node_status_allocatable_cpu_cores", "The CPU resources of a node that are available for scheduling.", allocatable, v1.ResourceCPU),
		fam("kube_node_status_allocatable_memory_bytes", "The memory resources of a node that are available for scheduling.", allocatable, v1.ResourceMemory),
	}
}

// daemonSetLegacyV1Families is the one daemon set family v2 renamed.
func daemonSetLegacyV1Families() []Family[*appsv1.DaemonSet] {
	return []Family[*appsv1.DaemonSet]{{
		Name: "kube_daemonset_updated_number_scheduled", Help: "The total number of nodes that are running updated daemon pod",
		Type: Gauge, Stability: Alpha,
		Generate: func(d *appsv1.DaemonSet, e *Emitter) { e.Emit(float64(d.Status.UpdatedNumberScheduled)) },
	}}
}

// hpaV1Identity keeps the namespace of an autoscaler's identity: v1 names
// the autoscaler in an `hpa` label, which the families add.
const hpaV1Identity = 1

// hpaLegacyV1Families are v1.9.8's kube_hpa_* families that v2 renamed to
// kube_horizontalpodautoscaler_*, in its order. v1.9.8 read them through
// autoscaling/v2beta1, which API servers no longer serve; these fields are
// the same in autoscaling/v2. Left out: kube_hpa_spec_target_metric (its
// v2beta1 target fields have no one-to-one v2 form).
func hpaLegacyV1Families() []Family[*autoscalingv2.HorizontalPodAutoscaler] {
	type H = *autoscalingv2.HorizontalPodAutoscaler
	fam := func(name, help string, gen func(a H, e *Emitter)) Family[H] {
		return Family[H]{Name: name, Help: help, Type: Gauge, Stability: Alpha, IdentityLabels: hpaV1Identity, Generate: gen}
	}
	count := func(v func(a H) int32) func(a H, e *Emitter) {
		return func(a H, e *Emitter) { e.Emit(float64(v(a)), "hpa", a.Name) }
	}
	return []Family[H]{
		fam("kube_hpa_metadata_generation", "The generation observed by the HorizontalPodAutoscaler controller.",
			func(a H, e *Emitter) { e.Emit(float64(a.Generation), "hpa", a.Name) }),
		fam("kube_hpa_spec_max_replicas", "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.",
			count(func(a H) int32 { return a.Spec.MaxReplicas })),
		// v1.9.8 dereferences minReplicas, which the API server defaults
		// to 1; an object without it has no series rather than a panic.
		fam("kube_hpa_spec_min_replicas", "Lower limit for the number of pods that can be set by the autoscaler, default 1.",
			func(a H, e *Emitter) {
				if a.Spec.MinReplicas != nil {
					e.Emit(float64(*a.Spec.MinReplicas), "hpa", a.Name)
				}
			}),
		fam("kube_hpa_status_current_replicas", "Current number of replicas of pods managed by this autoscaler.",
			count(func(a H) int32 { return a.Status.CurrentReplicas })),
		fam("kube_hpa_status_desired_replicas", "Desired number of replicas of pods managed by this autoscaler.",
			count(func(a H) int32 { return a.Status.DesiredReplicas })),
		// v1 had no allowlist: every label of the autoscaler.
		fam("kube_hpa_labels", "Kubernetes labels converted to Prometheus labels.",
			func(a H, e *Emitter) {
				keys, values := allowedLabels("label", a.Labels, []string{wildcard})
				e.EmitKV(1, keys, values, "hpa", a.Name)
			}),
		fam("kube_hpa_status_condition", "The condition of this autoscaler.",
			func(a H, e *Emitter) {
				for _, c := range a.Status.Conditions {
					emitConditionStatus(e, c.Status, "hpa", a.Name, "condition", string(c.Type))
				}
			}),
	}
}

// endpointsLegacyV1Families are v1.9.8's address counts of an Endpoints
// object, which v2 replaced with one kube_endpoint_address series per
// address. v1.9.8 counts each address once per port of its subset.
func endpointsLegacyV1Families() []Family[*coreEndpoints] {
	type E = *coreEndpoints
	// count sums addrs(subset i) times the subset's ports.
	count := func(addrs func(ep E, i int) int) func(E, *Emitter) {
		return func(ep E, e *Emitter) {
			n := 0
			for i := range ep.Subsets {
				n += addrs(ep, i) * len(ep.Subsets[i].Ports)
			}
			e.Emit(float64(n))
		}
	}
	return []Family[E]{
		{
			Name: "kube_endpoint_address_available", Help: "Number of addresses available in endpoint.",
			Type: Gauge, Stability: Alpha,
			Generate: count(func(ep E, i int) int { return len(ep.Subsets[i].Addresses) }),
		},
		{
			Name: "kube_endpoint_address_not_ready", Help: "Number of addresses not ready in endpoint",
			Type: Gauge, Stability: Alpha,
			Generate: count(func(ep E, i int) int { return len(ep.Subsets[i].NotReadyAddresses) }),
		},
	}
}
