package watch

import (
	"context"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// resourceQuotaResource describes resource quotas: kube-state-metrics'
// internal/store/resourcequota.go. kube_resourcequota reads the status, so
// quotas are watched whole.
func resourceQuotaResource() *Resource {
	return newResource("resourcequotas", true, &v1.ResourceQuota{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().ResourceQuotas(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().ResourceQuotas(ns).Watch(ctx, o)
		},
		func(q *v1.ResourceQuota, e *Emitter) {
			e.Identity("namespace", q.Namespace, "resourcequota", q.Name)
		},
		resourceQuotaFamilies,
	)
}

// resourceQuotaFamilies lists the resource quota families, in
// kube-state-metrics' order.
func resourceQuotaFamilies(o FamilyOptions) []Family[*v1.ResourceQuota] {
	type Q = *v1.ResourceQuota
	return []Family[Q]{
		{
			Name: "kube_resourcequota_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[Q],
		},
		{
			Name: "kube_resourcequota", Help: "Information about resource quota.",
			Type: Gauge, Stability: Stable, Generate: resourceQuotaStatus,
		},
		{
			Name: "kube_resourcequota_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[Q], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_resourcequota_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[Q], o.LabelsAllowlist),
		},
	}
}

// resourceQuotaStatus renders the enforced (hard) and observed (used)
// quantities of the status; kube-state-metrics ignores the spec.
func resourceQuotaStatus(q *v1.ResourceQuota, e *Emitter) {
	emitQuantities(e, q.Status.Hard, "type", "hard")
	emitQuantities(e, q.Status.Used, "type", "used")
}

// emitQuantities renders one series per resource of rl, in name order,
// valued by its quantity: resource as the first label, then kv, which is
// kube-state-metrics' order for resource quotas and limit ranges.
func emitQuantities(e *Emitter, rl v1.ResourceList, kv ...string) {
	kv = append([]string{"resource", ""}, kv...)
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		kv[1] = string(name)
		e.Emit(quantityFloat(&q), kv...)
	}
}
