package watch

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// podDisruptionBudgetResource describes pod disruption budgets:
// kube-state-metrics' internal/store/poddisruptionbudget.go.
func podDisruptionBudgetResource() *Resource {
	return newResource("poddisruptionbudgets", true, &policyv1.PodDisruptionBudget{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.PolicyV1().PodDisruptionBudgets(ns).Watch(ctx, o)
		},
		func(p *policyv1.PodDisruptionBudget, e *Emitter) {
			e.Identity("namespace", p.Namespace, "poddisruptionbudget", p.Name)
		},
		podDisruptionBudgetFamilies,
	)
}

// podDisruptionBudgetFamilies lists the budget families, in
// kube-state-metrics' order.
func podDisruptionBudgetFamilies(o FamilyOptions) []Family[*policyv1.PodDisruptionBudget] {
	type P = *policyv1.PodDisruptionBudget
	return []Family[P]{
		{
			Name: "kube_poddisruptionbudget_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[P], o.AnnotationsAllowlist),
		},
		{
			// ALPHA here, unlike the other resources' _labels families.
			Name: "kube_poddisruptionbudget_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[P], o.LabelsAllowlist),
		},
		{
			Name: "kube_poddisruptionbudget_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[P],
		},
		{
			Name: "kube_poddisruptionbudget_status_current_healthy", Help: "Current number of healthy pods",
			Type: Gauge, Stability: Stable,
			Generate: func(p P, e *Emitter) { e.Emit(float64(p.Status.CurrentHealthy)) },
		},
		{
			Name: "kube_poddisruptionbudget_status_desired_healthy", Help: "Minimum desired number of healthy pods",
			Type: Gauge, Stability: Stable,
			Generate: func(p P, e *Emitter) { e.Emit(float64(p.Status.DesiredHealthy)) },
		},
		{
			Name: "kube_poddisruptionbudget_status_pod_disruptions_allowed", Help: "Number of pod disruptions that are currently allowed",
			Type: Gauge, Stability: Stable,
			Generate: func(p P, e *Emitter) { e.Emit(float64(p.Status.DisruptionsAllowed)) },
		},
		{
			Name: "kube_poddisruptionbudget_status_expected_pods", Help: "Total number of pods counted by this disruption budget",
			Type: Gauge, Stability: Stable,
			Generate: func(p P, e *Emitter) { e.Emit(float64(p.Status.ExpectedPods)) },
		},
		{
			Name: "kube_poddisruptionbudget_status_observed_generation", Help: "Most recent generation observed when updating this PDB status",
			Type: Gauge, Stability: Stable,
			Generate: func(p P, e *Emitter) { e.Emit(float64(p.Status.ObservedGeneration)) },
		},
		{
			Name: "kube_poddisruptionbudget_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[P],
		},
	}
}
