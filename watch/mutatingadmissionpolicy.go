package watch

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// mutatingAdmissionPolicyResource describes mutatingadmissionpolicies:
// kube-state-metrics' internal/store/mutatingadmissionpolicy.go. Like
// kube-state-metrics it watches admissionregistration.k8s.io/v1, served by
// default since Kubernetes 1.36.
func mutatingAdmissionPolicyResource() *Resource {
	return admissionResource("mutatingadmissionpolicies", "mutatingadmissionpolicy", &admissionv1.MutatingAdmissionPolicy{},
		func(c Clients) admissionClient[*admissionv1.MutatingAdmissionPolicyList] {
			return c.Kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
		},
		mutatingAdmissionPolicyFamilies,
	)
}

// mutatingAdmissionPolicyFamilies lists the mutating admission policy
// families, in kube-state-metrics' order.
func mutatingAdmissionPolicyFamilies(FamilyOptions) []Family[*admissionv1.MutatingAdmissionPolicy] {
	type P = *admissionv1.MutatingAdmissionPolicy
	return []Family[P]{
		admissionInfo("kube_mutatingadmissionpolicy_info", "MutatingAdmissionPolicy", func(p P, e *Emitter) {
			kv := policyInfoLabels(p.Spec.ParamKind, p.Spec.FailurePolicy)
			e.Emit(1, append(kv, "reinvocation_policy", string(p.Spec.ReinvocationPolicy))...)
		}),
		admissionCreated[P]("kube_mutatingadmissionpolicy_created"),
	}
}
