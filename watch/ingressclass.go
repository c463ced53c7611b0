package watch

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ingressClassResource describes ingress classes: kube-state-metrics'
// internal/store/ingressclass.go.
func ingressClassResource() *Resource {
	return newResource("ingressclasses", false, &networkingv1.IngressClass{},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.NetworkingV1().IngressClasses().List(ctx, o)
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.NetworkingV1().IngressClasses().Watch(ctx, o)
		},
		func(ic *networkingv1.IngressClass, e *Emitter) {
			e.Identity("ingressclass", ic.Name)
		},
		ingressClassFamilies,
	)
}

// ingressClassFamilies lists the ingress class families, in
// kube-state-metrics' order.
func ingressClassFamilies(o FamilyOptions) []Family[*networkingv1.IngressClass] {
	type C = *networkingv1.IngressClass
	return []Family[C]{
		{
			Name: "kube_ingressclass_info", Help: "Information about ingressclass.",
			Type: Gauge, Stability: Alpha,
			Generate: func(ic C, e *Emitter) { e.Emit(1, "controller", ic.Spec.Controller) },
		},
		{
			Name: "kube_ingressclass_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[C],
		},
		{
			Name: "kube_ingressclass_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[C], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_ingressclass_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[C], o.LabelsAllowlist),
		},
	}
}
