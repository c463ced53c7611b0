package watch

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// mutatingAdmissionPolicyBindingResource describes
// mutatingadmissionpolicybindings: kube-state-metrics'
// internal/store/mutatingadmissionpolicybinding.go (admissionregistration/v1,
// as for mutating admission policies).
func mutatingAdmissionPolicyBindingResource() *Resource {
	return admissionResource("mutatingadmissionpolicybindings", "mutatingadmissionpolicybinding", &admissionv1.MutatingAdmissionPolicyBinding{},
		func(c Clients) admissionClient[*admissionv1.MutatingAdmissionPolicyBindingList] {
			return c.Kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
		},
		mutatingAdmissionPolicyBindingFamilies,
	)
}

// mutatingAdmissionPolicyBindingFamilies lists the mutating admission policy
// binding families, in kube-state-metrics' order.
func mutatingAdmissionPolicyBindingFamilies(FamilyOptions) []Family[*admissionv1.MutatingAdmissionPolicyBinding] {
	type B = *admissionv1.MutatingAdmissionPolicyBinding
	return []Family[B]{
		admissionInfo("kube_mutatingadmissionpolicybinding_info", "MutatingAdmissionPolicyBinding", func(b B, e *Emitter) {
			emitBindingInfo(e, b.Spec.PolicyName, b.Spec.ParamRef)
		}),
		admissionCreated[B]("kube_mutatingadmissionpolicybinding_created"),
	}
}
