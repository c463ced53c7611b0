package watch

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

func TestMutatingAdmissionPolicyBindingFamilies(t *testing.T) {
	type B = admissionv1.MutatingAdmissionPolicyBinding
	deny := admissionv1.DenyAction
	runAdmissionCases(t, mutatingAdmissionPolicyBindingResource, []admissionCase[*B]{
		{name: "param ref",
			obj: &B{ObjectMeta: ksmAdmissionMeta("mutatingadmissionpolicybinding1", "ns1", "123456", false),
				Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{
					PolicyName: "mutatingadmissionpolicy1",
					ParamRef:   &admissionv1.ParamRef{Name: "param1", Namespace: "ns1", ParameterNotFoundAction: &deny},
				}},
			want: `kube_mutatingadmissionpolicybinding_info{mutatingadmissionpolicybinding="mutatingadmissionpolicybinding1",namespace="ns1",param_name="param1",param_namespace="ns1",param_not_found_action="Deny",policy_name="mutatingadmissionpolicy1"} 1`},
		{name: "created, no param ref",
			obj: &B{ObjectMeta: ksmAdmissionMeta("mutatingadmissionpolicybinding2", "ns2", "abcdef", true),
				Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "mutatingadmissionpolicy2"}},
			want: `
			kube_mutatingadmissionpolicybinding_created{mutatingadmissionpolicybinding="mutatingadmissionpolicybinding2",namespace="ns2"} 1.501569018e+09
			kube_mutatingadmissionpolicybinding_info{mutatingadmissionpolicybinding="mutatingadmissionpolicybinding2",namespace="ns2",policy_name="mutatingadmissionpolicy2"} 1`},
		{name: "malformed", obj: &B{ObjectMeta: malformedMeta()},
			want: `kube_mutatingadmissionpolicybinding_info{} 1`},
	})
}
