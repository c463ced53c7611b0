package watch

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// networkPolicyResource describes network policies: kube-state-metrics'
// internal/store/networkpolicy.go.
func networkPolicyResource() *Resource {
	return newResource("networkpolicies", true, &networkingv1.NetworkPolicy{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.NetworkingV1().NetworkPolicies(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.NetworkingV1().NetworkPolicies(ns).Watch(ctx, o)
		},
		func(np *networkingv1.NetworkPolicy, e *Emitter) {
			e.Identity("namespace", np.Namespace, "networkpolicy", np.Name)
		},
		networkPolicyFamilies,
	)
}

// networkPolicyFamilies lists the network policy families, in
// kube-state-metrics' order.
func networkPolicyFamilies(o FamilyOptions) []Family[*networkingv1.NetworkPolicy] {
	type P = *networkingv1.NetworkPolicy
	return []Family[P]{
		{
			// Unlike other *_created families, rendered even without a
			// creation time: then as the zero time, -62135596800.
			Name: "kube_networkpolicy_created", Help: "Unix creation timestamp of network policy",
			Type: Gauge, Stability: Alpha,
			Generate: func(np P, e *Emitter) { e.Emit(timestampSeconds(np.CreationTimestamp)) },
		},
		{
			Name: "kube_networkpolicy_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[P], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_networkpolicy_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[P], o.LabelsAllowlist),
		},
		{
			Name: "kube_networkpolicy_spec_ingress_rules", Help: "Number of ingress rules on the networkpolicy",
			Type: Gauge, Stability: Alpha,
			Generate: func(np P, e *Emitter) { e.Emit(float64(len(np.Spec.Ingress))) },
		},
		{
			Name: "kube_networkpolicy_spec_egress_rules", Help: "Number of egress rules on the networkpolicy",
			Type: Gauge, Stability: Alpha,
			Generate: func(np P, e *Emitter) { e.Emit(float64(len(np.Spec.Egress))) },
		},
	}
}
