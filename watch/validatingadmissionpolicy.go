package watch

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// validatingAdmissionPolicyResource describes validatingadmissionpolicies:
// kube-state-metrics' internal/store/validatingadmissionpolicy.go.
func validatingAdmissionPolicyResource() *Resource {
	return admissionResource("validatingadmissionpolicies", "validatingadmissionpolicy", &admissionv1.ValidatingAdmissionPolicy{},
		func(c Clients) admissionClient[*admissionv1.ValidatingAdmissionPolicyList] {
			return c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
		},
		validatingAdmissionPolicyFamilies,
	)
}

// validatingAdmissionPolicyFamilies lists the validating admission policy
// families, in kube-state-metrics' order.
func validatingAdmissionPolicyFamilies(FamilyOptions) []Family[*admissionv1.ValidatingAdmissionPolicy] {
	type P = *admissionv1.ValidatingAdmissionPolicy
	return []Family[P]{
		admissionInfo("kube_validatingadmissionpolicy_info", "ValidatingAdmissionPolicy", func(p P, e *Emitter) {
			e.Emit(1, policyInfoLabels(p.Spec.ParamKind, p.Spec.FailurePolicy)...)
		}),
		admissionCreated[P]("kube_validatingadmissionpolicy_created"),
	}
}

// policyInfoLabels returns the labels the _info families of admission
// policies share: the parameter kind and the failure policy, empty when
// unset.
func policyInfoLabels(pk *admissionv1.ParamKind, fp *admissionv1.FailurePolicyType) []string {
	var apiVersion, kind, failure string
	if pk != nil {
		apiVersion, kind = pk.APIVersion, pk.Kind
	}
	if fp != nil {
		failure = string(*fp)
	}
	return []string{"param_api_version", apiVersion, "param_kind", kind, "failure_policy", failure}
}

// The helpers below are shared by the six admissionregistration resources
// (webhook configurations, admission policies and their bindings): all are
// cluster-scoped, identified by namespace (always empty, but kept as
// kube-state-metrics does) and name, and have an _info and a _created family
// of the same shape.

// admissionClient is the part of a typed clientset interface that lists and
// watches one cluster-scoped resource whose lists are of type L.
type admissionClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// admissionResource describes a cluster-scoped admissionregistration
// resource: name is its configuration name, label the identity label that
// carries the object's name.
func admissionResource[T metav1.Object, L runtime.Object](
	name, label string, expected T,
	client func(Clients) admissionClient[L],
	families func(FamilyOptions) []Family[T],
) *Resource {
	return newResource(name, false, expected,
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (runtime.Object, error) {
			l, err := client(c).List(ctx, o)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		func(ctx context.Context, c Clients, _ string, o metav1.ListOptions) (watch.Interface, error) {
			return client(c).Watch(ctx, o)
		},
		func(o T, e *Emitter) {
			e.Identity("namespace", o.GetNamespace(), label, o.GetName())
		},
		families,
	)
}

// admissionInfo returns the _info family of an admissionregistration
// resource of the given kind.
func admissionInfo[T metav1.Object](name, kind string, generate func(T, *Emitter)) Family[T] {
	return Family[T]{
		Name: name, Help: "Information about the " + kind + ".",
		Type: Gauge, Stability: Alpha, Generate: generate,
	}
}

// admissionCreated returns the _created family of an admissionregistration
// resource (its HELP, unlike most resources', ends with a period).
func admissionCreated[T metav1.Object](name string) Family[T] {
	return Family[T]{
		Name: name, Help: "Unix creation timestamp.",
		Type: Gauge, Stability: Alpha, Generate: emitCreated[T],
	}
}
