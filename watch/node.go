package watch

import (
	"context"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// nodeResource describes nodes: kube-state-metrics' internal/store/node.go.
func nodeResource() *Resource {
	return newResource("nodes", false, &v1.Node{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().Nodes().Watch(ctx, o)
		},
		func(n *v1.Node, e *Emitter) {
			e.Identity("node", n.Name)
		},
		nodeFamilies,
	)
}

// nodeFamilies lists the node families, in kube-state-metrics' order, then
// the v1 families the options name.
func nodeFamilies(o FamilyOptions) []Family[*v1.Node] {
	return append([]Family[*v1.Node]{
		{
			Name: "kube_node_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[*v1.Node], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_node_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[*v1.Node],
		},
		{
			Name: "kube_node_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[*v1.Node],
		},
		{
			Name: "kube_node_info", Help: "Information about a cluster node.",
			Type: Gauge, Stability: Stable, Generate: nodeInfo,
		},
		{
			Name: "kube_node_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[*v1.Node], o.LabelsAllowlist),
		},
		{
			Name: "kube_node_role", Help: "The role of a cluster node.",
			Type: Gauge, Stability: Alpha, Generate: nodeRole,
		},
		{
			Name: "kube_node_spec_pod_cidrs", Help: "The pod CIDRs of a cluster node.",
			Type: Gauge, Stability: Alpha, Generate: nodePodCIDRs,
		},
		{
			Name: "kube_node_spec_taint", Help: "The taint of a cluster node.",
			Type: Gauge, Stability: Stable, Generate: nodeTaints,
		},
		{
			Name: "kube_node_spec_unschedulable", Help: "Whether a node can schedule new pods.",
			Type: Gauge, Stability: Stable,
			Generate: func(n *v1.Node, e *Emitter) { e.Emit(boolFloat64(n.Spec.Unschedulable)) },
		},
		{
			Name: "kube_node_status_allocatable", Help: "The allocatable for different resources of a node that are available for scheduling.",
			Type: Gauge, Stability: Stable,
			Generate: func(n *v1.Node, e *Emitter) { emitNodeResources(e, n.Status.Allocatable) },
		},
		{
			Name: "kube_node_status_capacity", Help: "The capacity for different resources of a node.",
			Type: Gauge, Stability: Stable,
			Generate: func(n *v1.Node, e *Emitter) { emitNodeResources(e, n.Status.Capacity) },
		},
		{
			// A state set in shape (one series per status), but declared a
			// gauge by kube-state-metrics.
			Name: "kube_node_status_condition", Help: "The condition of a cluster node.",
			Type: Gauge, Stability: Stable, Generate: nodeConditions,
		},
		{
			Name: "kube_node_status_addresses", Help: "Node address information.",
			Type: Gauge, Stability: Alpha, Generate: nodeAddresses,
		},
	}, legacyV1(o, nodeLegacyV1Families)...)
}

func nodeInfo(n *v1.Node, e *Emitter) {
	ni := &n.Status.NodeInfo
	e.Emit(1,
		"kernel_version", ni.KernelVersion,
		"os_image", ni.OSImage,
		"container_runtime_version", ni.ContainerRuntimeVersion,
		"kubelet_version", ni.KubeletVersion,
		// kube-state-metrics reports the kube-proxy version as a constant
		// since the field was deprecated.
		"kubeproxy_version", "deprecated",
		"provider_id", n.Spec.ProviderID,
		"pod_cidr", n.Spec.PodCIDR,
		"system_uuid", ni.SystemUUID,
		"internal_ip", nodeInternalIP(n),
	)
}

// nodeInternalIP returns the node's last InternalIP address, as
// kube-state-metrics picks it for kube_node_info, or "".
func nodeInternalIP(n *v1.Node) string {
	ip := ""
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			ip = a.Address
		}
	}
	return ip
}

// nodeRolePrefix marks the node labels that give kube_node_role its roles.
const nodeRolePrefix = "node-role.kubernetes.io/"

func nodeRole(n *v1.Node, e *Emitter) {
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		if role, ok := strings.CutPrefix(k, nodeRolePrefix); ok {
			e.Emit(1, "role", role)
		}
	}
}

func nodePodCIDRs(n *v1.Node, e *Emitter) {
	for _, c := range n.Spec.PodCIDRs {
		e.Emit(1, "pod_cidr", c)
	}
}

func nodeTaints(n *v1.Node, e *Emitter) {
	for _, t := range n.Spec.Taints {
		e.Emit(1, "key", t.Key, "value", t.Value, "effect", string(t.Effect))
	}
}

func nodeConditions(n *v1.Node, e *Emitter) {
	for _, c := range n.Status.Conditions {
		emitConditionStatus(e, c.Status, "condition", string(c.Type))
	}
}

func nodeAddresses(n *v1.Node, e *Emitter) {
	for _, a := range n.Status.Addresses {
		e.Emit(1, "type", string(a.Type), "address", a.Address)
	}
}

// emitNodeResources renders a node's capacity or allocatable: one series per
// exported resource and unit, with the resource name sanitised into the
// `resource` label, in resource name order.
func emitNodeResources(e *Emitter, rl v1.ResourceList) {
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		v := quantityFloat(&q)
		res := sanitizeLabelName(string(name))
		for _, unit := range nodeResourceUnits(name) {
			e.Emit(v, "resource", res, "unit", unit)
		}
	}
}

// nodeResourceUnits returns the units kube-state-metrics exports a node
// resource under: none for resources it ignores, and two for a name that is
// both a hugepage or attachable-volume name and an extended resource name
// (e.g. "hugepages-x/y"), since it checks those rules independently.
func nodeResourceUnits(name v1.ResourceName) []string {
	if u, ok := resourceUnit(name); ok {
		return []string{u}
	}
	var units []string
	if isHugePageResourceName(name) {
		units = append(units, unitByte)
	}
	if isAttachableVolumeResourceName(name) {
		units = append(units, unitByte)
	}
	if isExtendedResourceName(name) {
		units = append(units, unitInteger)
	}
	return units
}
