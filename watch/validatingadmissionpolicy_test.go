package watch

import (
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// admissionCase is one golden case of an admissionregistration resource: obj
// rendered with the named families (all default ones when none).
type admissionCase[T any] struct {
	name     string
	obj      T
	families []string
	want     string
}

// runAdmissionCases renders every case with the resource and compares.
func runAdmissionCases[T any](t *testing.T, r func() *Resource, cases []admissionCase[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, r(), FamilyOptions{}, c.obj, c.families...))
		})
	}
}

// ksmAdmissionMeta is the metadata of kube-state-metrics' admission test
// objects, created at Unix time 1501569018 when created is true.
func ksmAdmissionMeta(name, namespace, resourceVersion string, created bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: resourceVersion, UID: types.UID("uid-" + name)}
	if created {
		m.CreationTimestamp = metav1.NewTime(time.Unix(1501569018, 0))
	}
	return m
}

// malformedMeta is metadata with nothing but the UID the renderer needs.
func malformedMeta() metav1.ObjectMeta { return metav1.ObjectMeta{UID: "uid-malformed"} }

func TestValidatingAdmissionPolicyFamilies(t *testing.T) {
	type P = admissionv1.ValidatingAdmissionPolicy
	fail, ignore := admissionv1.Fail, admissionv1.Ignore
	runAdmissionCases(t, validatingAdmissionPolicyResource, []admissionCase[*P]{
		{name: "param kind and failure policy",
			obj: &P{ObjectMeta: ksmAdmissionMeta("validatingadmissionpolicy1", "ns1", "123456", false),
				Spec: admissionv1.ValidatingAdmissionPolicySpec{
					ParamKind:     &admissionv1.ParamKind{APIVersion: "rules.example.com/v1", Kind: "Rule"},
					FailurePolicy: &fail,
				}},
			want: `kube_validatingadmissionpolicy_info{failure_policy="Fail",namespace="ns1",param_api_version="rules.example.com/v1",param_kind="Rule",validatingadmissionpolicy="validatingadmissionpolicy1"} 1`},
		{name: "created, no param kind",
			obj: &P{ObjectMeta: ksmAdmissionMeta("validatingadmissionpolicy2", "ns2", "abcdef", true),
				Spec: admissionv1.ValidatingAdmissionPolicySpec{FailurePolicy: &ignore}},
			want: `
			kube_validatingadmissionpolicy_created{namespace="ns2",validatingadmissionpolicy="validatingadmissionpolicy2"} 1.501569018e+09
			kube_validatingadmissionpolicy_info{failure_policy="Ignore",namespace="ns2",validatingadmissionpolicy="validatingadmissionpolicy2"} 1`},
		{name: "cluster-scoped object, one family",
			obj: &P{ObjectMeta: ksmAdmissionMeta("p", "", "1", true)}, families: []string{"kube_validatingadmissionpolicy_created"},
			want: `kube_validatingadmissionpolicy_created{validatingadmissionpolicy="p"} 1.501569018e+09`},
		{name: "malformed", obj: &P{ObjectMeta: malformedMeta()},
			want: `kube_validatingadmissionpolicy_info{} 1`},
	})
}
