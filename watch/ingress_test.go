package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testIngress returns ingress<n> in namespace ns<n>, created at
// 1501569018 unless n is "1", with the given resource version.
func testIngress(n, version string) *networkingv1.Ingress {
	i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Name: "ingress" + n, Namespace: "ns" + n, UID: types.UID("uid" + n), ResourceVersion: version,
	}}
	if n != "1" {
		i.CreationTimestamp = metav1.Unix(1501569018, 0)
	}
	return i
}

// ingressFamilyNames are the families kube-state-metrics' TestIngressStore
// selects in most cases.
var ingressFamilyNames = []string{
	"kube_ingress_info", "kube_ingress_metadata_resource_version", "kube_ingress_created",
	"kube_ingress_labels", "kube_ingress_path", "kube_ingress_tls",
}

// TestIngressKSMCases ports kube-state-metrics' TestIngressStore.
func TestIngressKSMCases(t *testing.T) {
	annotated := testIngress("1", "000000")
	annotated.Annotations = map[string]string{"app": "mysql-server", "app.k8s.io/owner": "@foo"}

	labelled := func(n string) *networkingv1.Ingress {
		i := testIngress(n, "abcdef")
		i.Labels = map[string]string{"test-" + n: "test-" + n}
		return i
	}
	paths := labelled("4")
	paths.Spec.Rules = []networkingv1.IngressRule{
		{
			Host: "somehost",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				{
					Path:     "/somepath",
					PathType: new(networkingv1.PathTypeExact),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "someservice", Port: networkingv1.ServiceBackendPort{Number: 1234},
					}},
				},
				{
					Path:    "/somepath2",
					Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "somekind", Name: "somename"}},
				},
			}}},
		},
		{Host: "somehost2"},
	}
	tls := labelled("5")
	tls.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"somehost1", "somehost2"}, SecretName: "somesecret"}}
	className := testIngress("6", "123456")
	className.Spec.IngressClassName = new("test")
	classAnnotation := testIngress("7", "123456")
	classAnnotation.Annotations = map[string]string{"kubernetes.io/ingress.class": "test"}

	runNetworkCases(t, ingressResource, []networkCase[*networkingv1.Ingress]{
		{
			name: "annotations and zero resource version", obj: annotated,
			opts:     FamilyOptions{AnnotationsAllowlist: []string{"app.k8s.io/owner"}},
			families: []string{"kube_ingress_info", "kube_ingress_metadata_resource_version", "kube_ingress_annotations", "kube_ingress_labels"},
			want: `
kube_ingress_annotations{annotation_app_k8s_io_owner="@foo",ingress="ingress1",namespace="ns1"} 1
kube_ingress_info{ingress="ingress1",ingressclass="_default",namespace="ns1"} 1
kube_ingress_metadata_resource_version{ingress="ingress1",namespace="ns1"} 0
`,
		},
		{
			name: "created", obj: testIngress("2", "123456"), families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress2",namespace="ns2"} 1.501569018e+09
kube_ingress_info{ingress="ingress2",ingressclass="_default",namespace="ns2"} 1
kube_ingress_metadata_resource_version{ingress="ingress2",namespace="ns2"} 123456
`,
		},
		{
			name: "non-numeric resource version", obj: labelled("3"), families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress3",namespace="ns3"} 1.501569018e+09
kube_ingress_info{ingress="ingress3",ingressclass="_default",namespace="ns3"} 1
`,
		},
		{
			// KSM prints path_type="" and resource_api_group=""; Prometheus
			// drops them.
			name: "paths", obj: paths, families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress4",namespace="ns4"} 1.501569018e+09
kube_ingress_info{ingress="ingress4",ingressclass="_default",namespace="ns4"} 1
kube_ingress_path{host="somehost",ingress="ingress4",namespace="ns4",path="/somepath",path_type="Exact",service_name="someservice",service_port="1234"} 1
kube_ingress_path{host="somehost",ingress="ingress4",namespace="ns4",path="/somepath2",resource_kind="somekind",resource_name="somename"} 1
`,
		},
		{
			name: "tls", obj: tls, families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress5",namespace="ns5"} 1.501569018e+09
kube_ingress_info{ingress="ingress5",ingressclass="_default",namespace="ns5"} 1
kube_ingress_tls{ingress="ingress5",namespace="ns5",secret="somesecret",tls_host="somehost1"} 1
kube_ingress_tls{ingress="ingress5",namespace="ns5",secret="somesecret",tls_host="somehost2"} 1
`,
		},
		{
			name: "class name", obj: className, families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress6",namespace="ns6"} 1.501569018e+09
kube_ingress_info{ingress="ingress6",ingressclass="test",namespace="ns6"} 1
kube_ingress_metadata_resource_version{ingress="ingress6",namespace="ns6"} 123456
`,
		},
		{
			name: "class annotation", obj: classAnnotation, families: ingressFamilyNames,
			want: `
kube_ingress_created{ingress="ingress7",namespace="ns7"} 1.501569018e+09
kube_ingress_info{ingress="ingress7",ingressclass="test",namespace="ns7"} 1
kube_ingress_metadata_resource_version{ingress="ingress7",namespace="ns7"} 123456
`,
		},
	})
}

func TestIngressClassAndPorts(t *testing.T) {
	// The legacy annotation wins over spec.ingressClassName, even empty.
	both := testIngress("1", "")
	both.Spec.IngressClassName = new("spec")
	both.Annotations = map[string]string{"kubernetes.io/ingress.class": "legacy"}
	emptyAnnotation := testIngress("2", "")
	emptyAnnotation.Spec.IngressClassName = new("spec")
	emptyAnnotation.Annotations = map[string]string{"kubernetes.io/ingress.class": ""}

	namedPort := testIngress("3", "")
	namedPort.Spec.Rules = []networkingv1.IngressRule{{
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
			{
				Path: "/", PathType: new(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"},
				}},
			},
			{
				Path: "/static", PathType: new(networkingv1.PathTypeImplementationSpecific),
				Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{
					APIGroup: new("storage.example.com"), Kind: "Bucket", Name: "assets",
				}},
			},
		}}},
	}}

	runNetworkCases(t, ingressResource, []networkCase[*networkingv1.Ingress]{
		{
			name: "annotation over spec", obj: both, families: []string{"kube_ingress_info"},
			want: `kube_ingress_info{ingress="ingress1",ingressclass="legacy",namespace="ns1"} 1`,
		},
		{
			name: "empty annotation over spec", obj: emptyAnnotation, families: []string{"kube_ingress_info"},
			want: `kube_ingress_info{ingress="ingress2",namespace="ns2"} 1`,
		},
		{
			name: "named port and resource api group", obj: namedPort, families: []string{"kube_ingress_path"},
			want: `
kube_ingress_path{ingress="ingress3",namespace="ns3",path="/",path_type="Prefix",service_name="web",service_port="0"} 1
kube_ingress_path{ingress="ingress3",namespace="ns3",path="/static",path_type="ImplementationSpecific",resource_api_group="storage.example.com",resource_kind="Bucket",resource_name="assets"} 1
`,
		},
	})
}

// TestIngressMalformed renders every family of ingresses with missing
// fields. A path with no backend at all (kube-state-metrics would panic on
// it; the API server rejects it) renders without backend labels.
func TestIngressMalformed(t *testing.T) {
	odd := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	odd.Spec.Rules = []networkingv1.IngressRule{{}, {IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{}}},
	}}}
	odd.Spec.TLS = []networkingv1.IngressTLS{{}, {Hosts: []string{""}}}
	all := networkAllFamilies(ingressResource())
	runNetworkCases(t, ingressResource, []networkCase[*networkingv1.Ingress]{
		{
			name: "empty", opts: networkAllowAll, families: all,
			obj: &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			want: `
kube_ingress_annotations{} 1
kube_ingress_info{ingressclass="_default"} 1
kube_ingress_labels{} 1
`,
		},
		{
			name: "empty entries", opts: networkAllowAll, families: all, obj: odd,
			want: `
kube_ingress_annotations{} 1
kube_ingress_info{ingressclass="_default"} 1
kube_ingress_labels{} 1
kube_ingress_path{} 1
kube_ingress_tls{} 1
`,
		},
	})
}
