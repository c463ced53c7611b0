package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// namespaceResource describes namespaces: kube-state-metrics'
// internal/store/namespace.go.
func namespaceResource() *Resource {
	return newResource("namespaces", false, &v1.Namespace{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().Namespaces().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().Namespaces().Watch(ctx, o)
		},
		func(n *v1.Namespace, e *Emitter) {
			e.Identity("namespace", n.Name)
		},
		namespaceFamilies,
	)
}

// namespaceFamilies lists the namespace families, in kube-state-metrics'
// order.
func namespaceFamilies(o FamilyOptions) []Family[*v1.Namespace] {
	return []Family[*v1.Namespace]{
		{
			Name: "kube_namespace_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[*v1.Namespace],
		},
		{
			Name: "kube_namespace_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[*v1.Namespace], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_namespace_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[*v1.Namespace], o.LabelsAllowlist),
		},
		{
			// A state set in shape, declared a gauge by kube-state-metrics.
			Name: "kube_namespace_status_phase", Help: "kubernetes namespace status phase.",
			Type: Gauge, Stability: Stable, Generate: namespacePhase,
		},
		{
			Name: "kube_namespace_status_condition", Help: "The condition of a namespace.",
			Type: Gauge, Stability: Alpha, Generate: namespaceConditions,
		},
	}
}

// namespacePhases are the phases kube_namespace_status_phase renders.
var namespacePhases = []v1.NamespacePhase{v1.NamespaceActive, v1.NamespaceTerminating}

// namespacePhase renders every phase, 1 for the current one. Unlike
// emitOneOf it renders even when the phase is unset (every series then 0),
// as kube-state-metrics does.
func namespacePhase(n *v1.Namespace, e *Emitter) {
	for _, p := range namespacePhases {
		e.Emit(boolFloat64(n.Status.Phase == p), "phase", string(p))
	}
}

func namespaceConditions(n *v1.Namespace, e *Emitter) {
	for _, c := range n.Status.Conditions {
		emitConditionStatus(e, c.Status, "condition", string(c.Type))
	}
}
