package watch

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// validatingAdmissionPolicyBindingResource describes
// validatingadmissionpolicybindings: kube-state-metrics'
// internal/store/validatingadmissionpolicybinding.go.
func validatingAdmissionPolicyBindingResource() *Resource {
	return admissionResource("validatingadmissionpolicybindings", "validatingadmissionpolicybinding", &admissionv1.ValidatingAdmissionPolicyBinding{},
		func(c Clients) admissionClient[*admissionv1.ValidatingAdmissionPolicyBindingList] {
			return c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
		},
		validatingAdmissionPolicyBindingFamilies,
	)
}

// validatingAdmissionPolicyBindingFamilies lists the validating admission
// policy binding families, in kube-state-metrics' order.
func validatingAdmissionPolicyBindingFamilies(FamilyOptions) []Family[*admissionv1.ValidatingAdmissionPolicyBinding] {
	type B = *admissionv1.ValidatingAdmissionPolicyBinding
	return []Family[B]{
		admissionInfo("kube_validatingadmissionpolicybinding_info", "ValidatingAdmissionPolicyBinding", func(b B, e *Emitter) {
			emitBindingInfo(e, b.Spec.PolicyName, b.Spec.ParamRef)
		}),
		admissionCreated[B]("kube_validatingadmissionpolicybinding_created"),
		{
			Name: "kube_validatingadmissionpolicybinding_validation_action", Help: "Validation actions for the ValidatingAdmissionPolicyBinding.",
			Type: Gauge, Stability: Alpha,
			Generate: func(b B, e *Emitter) {
				for _, a := range b.Spec.ValidationActions {
					e.Emit(1, "action", string(a))
				}
			},
		},
	}
}

// emitBindingInfo renders the _info series of an admission policy binding
// (validating or mutating): the bound policy and the parameter reference,
// empty when unset.
func emitBindingInfo(e *Emitter, policy string, ref *admissionv1.ParamRef) {
	var name, namespace, notFound string
	if ref != nil {
		name, namespace = ref.Name, ref.Namespace
		if ref.ParameterNotFoundAction != nil {
			notFound = string(*ref.ParameterNotFoundAction)
		}
	}
	e.Emit(1, "policy_name", policy, "param_name", name, "param_namespace", namespace, "param_not_found_action", notFound)
}
