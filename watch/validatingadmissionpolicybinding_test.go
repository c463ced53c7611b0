package watch

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

func TestValidatingAdmissionPolicyBindingFamilies(t *testing.T) {
	type B = admissionv1.ValidatingAdmissionPolicyBinding
	deny := admissionv1.DenyAction
	runAdmissionCases(t, validatingAdmissionPolicyBindingResource, []admissionCase[*B]{
		{name: "param ref and validation actions",
			obj: &B{ObjectMeta: ksmAdmissionMeta("validatingadmissionpolicybinding1", "ns1", "123456", false),
				Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName:        "validatingadmissionpolicy1",
					ParamRef:          &admissionv1.ParamRef{Name: "param1", Namespace: "ns1", ParameterNotFoundAction: &deny},
					ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny, admissionv1.Warn},
				}},
			want: `
			kube_validatingadmissionpolicybinding_info{namespace="ns1",param_name="param1",param_namespace="ns1",param_not_found_action="Deny",policy_name="validatingadmissionpolicy1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1"} 1
			kube_validatingadmissionpolicybinding_validation_action{action="Deny",namespace="ns1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1"} 1
			kube_validatingadmissionpolicybinding_validation_action{action="Warn",namespace="ns1",validatingadmissionpolicybinding="validatingadmissionpolicybinding1"} 1`},
		{name: "created, no param ref",
			obj: &B{ObjectMeta: ksmAdmissionMeta("validatingadmissionpolicybinding2", "ns2", "abcdef", true),
				Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "validatingadmissionpolicy2"}},
			want: `
			kube_validatingadmissionpolicybinding_created{namespace="ns2",validatingadmissionpolicybinding="validatingadmissionpolicybinding2"} 1.501569018e+09
			kube_validatingadmissionpolicybinding_info{namespace="ns2",policy_name="validatingadmissionpolicy2",validatingadmissionpolicybinding="validatingadmissionpolicybinding2"} 1`},
		{name: "param selector without name or action",
			obj: &B{ObjectMeta: ksmAdmissionMeta("b", "", "1", false),
				Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ParamRef: &admissionv1.ParamRef{Namespace: "params"},
					ValidationActions: []admissionv1.ValidationAction{admissionv1.Audit}}},
			want: `
			kube_validatingadmissionpolicybinding_info{param_namespace="params",policy_name="p",validatingadmissionpolicybinding="b"} 1
			kube_validatingadmissionpolicybinding_validation_action{action="Audit",validatingadmissionpolicybinding="b"} 1`},
		{name: "malformed", obj: &B{ObjectMeta: malformedMeta()},
			want: `kube_validatingadmissionpolicybinding_info{} 1`},
	})
}
