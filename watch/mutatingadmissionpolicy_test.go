package watch

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

func TestMutatingAdmissionPolicyFamilies(t *testing.T) {
	type P = admissionv1.MutatingAdmissionPolicy
	fail, ignore := admissionv1.Fail, admissionv1.Ignore
	runAdmissionCases(t, mutatingAdmissionPolicyResource, []admissionCase[*P]{
		{name: "param kind, failure and reinvocation policies",
			obj: &P{ObjectMeta: ksmAdmissionMeta("mutatingadmissionpolicy1", "ns1", "123456", false),
				Spec: admissionv1.MutatingAdmissionPolicySpec{
					ParamKind:          &admissionv1.ParamKind{APIVersion: "rules.example.com/v1", Kind: "Rule"},
					FailurePolicy:      &fail,
					ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
				}},
			want: `kube_mutatingadmissionpolicy_info{failure_policy="Fail",mutatingadmissionpolicy="mutatingadmissionpolicy1",namespace="ns1",param_api_version="rules.example.com/v1",param_kind="Rule",reinvocation_policy="Never"} 1`},
		{name: "created, no param kind",
			obj: &P{ObjectMeta: ksmAdmissionMeta("mutatingadmissionpolicy2", "ns2", "abcdef", true),
				Spec: admissionv1.MutatingAdmissionPolicySpec{FailurePolicy: &ignore, ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy}},
			want: `
			kube_mutatingadmissionpolicy_created{mutatingadmissionpolicy="mutatingadmissionpolicy2",namespace="ns2"} 1.501569018e+09
			kube_mutatingadmissionpolicy_info{failure_policy="Ignore",mutatingadmissionpolicy="mutatingadmissionpolicy2",namespace="ns2",reinvocation_policy="IfNeeded"} 1`},
		{name: "malformed", obj: &P{ObjectMeta: malformedMeta()},
			want: `kube_mutatingadmissionpolicy_info{} 1`},
	})
}
