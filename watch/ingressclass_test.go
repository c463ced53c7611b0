package watch

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testIngressClass returns an ingress class of controller "controller".
func testIngressClass(name string) *networkingv1.IngressClass {
	return &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid"},
		Spec:       networkingv1.IngressClassSpec{Controller: "controller"},
	}
}

// TestIngressClassKSMCases ports kube-state-metrics' TestIngressClassStore.
func TestIngressClassKSMCases(t *testing.T) {
	created := testIngressClass("test_kube_ingressclass-created")
	created.CreationTimestamp = metav1.Unix(1501569018, 0)
	labelled := testIngressClass("test_ingressclass-labels")
	labelled.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}
	labelled.Labels = map[string]string{"foo": "bar"}

	runNetworkCases(t, ingressClassResource, []networkCase[*networkingv1.IngressClass]{
		{
			name: "info", obj: testIngressClass("test_ingressclass-info"), families: []string{"kube_ingressclass_info"},
			want: `kube_ingressclass_info{controller="controller",ingressclass="test_ingressclass-info"} 1`,
		},
		{
			name: "created", obj: created, families: []string{"kube_ingressclass_created"},
			want: `kube_ingressclass_created{ingressclass="test_kube_ingressclass-created"} 1.501569018e+09`,
		},
		{
			name: "annotations allowlist", obj: labelled,
			opts:     FamilyOptions{AnnotationsAllowlist: []string{"ingressclass.kubernetes.io/is-default-class"}},
			families: []string{"kube_ingressclass_annotations", "kube_ingressclass_labels"},
			want:     `kube_ingressclass_annotations{annotation_ingressclass_kubernetes_io_is_default_class="true",ingressclass="test_ingressclass-labels"} 1`,
		},
		{
			name: "defaults", obj: created,
			want: `
kube_ingressclass_created{ingressclass="test_kube_ingressclass-created"} 1.501569018e+09
kube_ingressclass_info{controller="controller",ingressclass="test_kube_ingressclass-created"} 1
`,
		},
	})
}

// TestIngressClassMalformed renders every family of an empty ingress class.
func TestIngressClassMalformed(t *testing.T) {
	runNetworkCases(t, ingressClassResource, []networkCase[*networkingv1.IngressClass]{{
		name: "empty", opts: networkAllowAll, families: networkAllFamilies(ingressClassResource()),
		obj: &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
		want: `
kube_ingressclass_annotations{} 1
kube_ingressclass_info{} 1
kube_ingressclass_labels{} 1
`,
	}})
}
