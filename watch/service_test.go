package watch

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// networkCase is one golden case of the network resources' tests: obj
// rendered with the named families (every default one when none is named).
type networkCase[T any] struct {
	name     string
	opts     FamilyOptions
	obj      T
	families []string
	want     string
}

// runNetworkCases renders each case with a fresh resource from newR.
func runNetworkCases[T any](t *testing.T, newR func() *Resource, cases []networkCase[T]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireGolden(t, c.want, renderText(t, newR(), c.opts, c.obj, c.families...))
		})
	}
}

// networkAllFamilies returns the names of every family of a resource, opt-in
// ones included, for the malformed-object cases.
func networkAllFamilies(r *Resource) []string {
	var names []string
	for _, f := range r.Families(FamilyOptions{}) {
		names = append(names, f.Name)
	}
	return names
}

// networkAllowAll exports every label and annotation.
var networkAllowAll = FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}

// testService returns a service like those of kube-state-metrics'
// TestServiceStore: created at 1.5e9 in namespace default, with UID uidN.
func testService(n string, spec v1.ServiceSpec) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "test-service" + n, Namespace: "default", UID: types.UID("uid" + n),
			CreationTimestamp: metav1.Time{Time: time.Unix(1500000000, 0)},
			Labels:            map[string]string{"app": "example" + n},
		},
		Spec: spec,
	}
}

// TestServiceKSMCases ports kube-state-metrics' TestServiceStore.
func TestServiceKSMCases(t *testing.T) {
	lb := testService("5", v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer})
	lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "1.2.3.8", Hostname: "www.example.com"}}
	deleted := testService("9", v1.ServiceSpec{ClusterIP: "1.2.3.4", Type: v1.ServiceTypeClusterIP})
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Unix(1800000000, 0)}

	runNetworkCases(t, serviceResource, []networkCase[*v1.Service]{
		{
			name: "cluster ip", obj: testService("1", v1.ServiceSpec{ClusterIP: "1.2.3.4", Type: v1.ServiceTypeClusterIP}),
			families: []string{"kube_service_annotations", "kube_service_created", "kube_service_info", "kube_service_labels", "kube_service_spec_type"},
			want: `
kube_service_created{namespace="default",service="test-service1",uid="uid1"} 1.5e+09
kube_service_info{cluster_ip="1.2.3.4",namespace="default",service="test-service1",uid="uid1"} 1
kube_service_spec_type{namespace="default",service="test-service1",type="ClusterIP",uid="uid1"} 1
`,
		},
		{
			name: "node port", obj: testService("2", v1.ServiceSpec{ClusterIP: "1.2.3.5", Type: v1.ServiceTypeNodePort}),
			want: `
kube_service_created{namespace="default",service="test-service2",uid="uid2"} 1.5e+09
kube_service_info{cluster_ip="1.2.3.5",namespace="default",service="test-service2",uid="uid2"} 1
kube_service_spec_type{namespace="default",service="test-service2",type="NodePort",uid="uid2"} 1
`,
		},
		{
			name: "load balancer ip", obj: testService("3", v1.ServiceSpec{ClusterIP: "1.2.3.6", LoadBalancerIP: "1.2.3.7", Type: v1.ServiceTypeLoadBalancer}),
			want: `
kube_service_created{namespace="default",service="test-service3",uid="uid3"} 1.5e+09
kube_service_info{cluster_ip="1.2.3.6",load_balancer_ip="1.2.3.7",namespace="default",service="test-service3",uid="uid3"} 1
kube_service_spec_type{namespace="default",service="test-service3",type="LoadBalancer",uid="uid3"} 1
`,
		},
		{
			name: "external name", obj: testService("4", v1.ServiceSpec{ExternalName: "www.example.com", Type: v1.ServiceTypeExternalName}),
			want: `
kube_service_created{namespace="default",service="test-service4",uid="uid4"} 1.5e+09
kube_service_info{external_name="www.example.com",namespace="default",service="test-service4",uid="uid4"} 1
kube_service_spec_type{namespace="default",service="test-service4",type="ExternalName",uid="uid4"} 1
`,
		},
		{
			name: "load balancer ingress", obj: lb,
			want: `
kube_service_created{namespace="default",service="test-service5",uid="uid5"} 1.5e+09
kube_service_info{namespace="default",service="test-service5",uid="uid5"} 1
kube_service_spec_type{namespace="default",service="test-service5",type="LoadBalancer",uid="uid5"} 1
kube_service_status_load_balancer_ingress{hostname="www.example.com",ip="1.2.3.8",namespace="default",service="test-service5",uid="uid5"} 1
`,
		},
		{
			name: "external ips", obj: testService("6", v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ExternalIPs: []string{"1.2.3.9", "1.2.3.10"}}),
			want: `
kube_service_created{namespace="default",service="test-service6",uid="uid6"} 1.5e+09
kube_service_info{namespace="default",service="test-service6",uid="uid6"} 1
kube_service_spec_type{namespace="default",service="test-service6",type="ClusterIP",uid="uid6"} 1
kube_service_spec_external_ip{external_ip="1.2.3.9",namespace="default",service="test-service6",uid="uid6"} 1
kube_service_spec_external_ip{external_ip="1.2.3.10",namespace="default",service="test-service6",uid="uid6"} 1
`,
		},
		{
			name: "external traffic policy cluster", obj: testService("7", v1.ServiceSpec{ClusterIP: "1.2.3.11", Type: v1.ServiceTypeClusterIP, ExternalTrafficPolicy: "Cluster"}),
			want: `
kube_service_created{namespace="default",service="test-service7",uid="uid7"} 1.5e+09
kube_service_info{cluster_ip="1.2.3.11",external_traffic_policy="Cluster",namespace="default",service="test-service7",uid="uid7"} 1
kube_service_spec_type{namespace="default",service="test-service7",type="ClusterIP",uid="uid7"} 1
`,
		},
		{
			name: "external traffic policy local",
			obj:  testService("8", v1.ServiceSpec{ClusterIP: "1.2.3.12", LoadBalancerIP: "1.2.3.13", Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: "Local"}),
			want: `
kube_service_created{namespace="default",service="test-service8",uid="uid8"} 1.5e+09
kube_service_info{cluster_ip="1.2.3.12",external_traffic_policy="Local",load_balancer_ip="1.2.3.13",namespace="default",service="test-service8",uid="uid8"} 1
kube_service_spec_type{namespace="default",service="test-service8",type="LoadBalancer",uid="uid8"} 1
`,
		},
		{
			name: "deletion timestamp", obj: deleted, families: []string{"kube_service_deletion_timestamp"},
			want: `kube_service_deletion_timestamp{namespace="default",service="test-service9",uid="uid9"} 1.8e+09`,
		},
	})
}

func TestServiceMetadataFamilies(t *testing.T) {
	s := testService("1", v1.ServiceSpec{})
	s.Annotations = map[string]string{"team.io/owner": "sre"}
	runNetworkCases(t, serviceResource, []networkCase[*v1.Service]{
		{
			name: "allowlists", obj: s, families: []string{"kube_service_annotations", "kube_service_labels"},
			opts: FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"team.io/*"}},
			want: `
kube_service_annotations{annotation_team_io_owner="sre",namespace="default",service="test-service1",uid="uid1"} 1
kube_service_labels{label_app="example1",namespace="default",service="test-service1",uid="uid1"} 1
`,
		},
		{
			// The LoadBalancer ingress ports and ipMode are not exported.
			name: "ingress without ip", families: []string{"kube_service_status_load_balancer_ingress"},
			obj: func() *v1.Service {
				s := testService("2", v1.ServiceSpec{})
				mode := v1.LoadBalancerIPModeProxy
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{Hostname: "lb.example.com", IPMode: &mode}}
				return s
			}(),
			want: `kube_service_status_load_balancer_ingress{hostname="lb.example.com",namespace="default",service="test-service2",uid="uid2"} 1`,
		},
	})
}

// TestServiceMalformed renders every family of services with missing
// fields; the spec type series stays, without its label.
func TestServiceMalformed(t *testing.T) {
	odd := &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u", DeletionTimestamp: &metav1.Time{}}}
	odd.Spec.ExternalIPs = []string{""}
	odd.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{}}
	runNetworkCases(t, serviceResource, []networkCase[*v1.Service]{
		{
			name: "empty", opts: networkAllowAll, families: networkAllFamilies(serviceResource()),
			obj: &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			want: `
kube_service_annotations{uid="u"} 1
kube_service_info{uid="u"} 1
kube_service_labels{uid="u"} 1
kube_service_spec_type{uid="u"} 1
`,
		},
		{
			name: "empty entries", opts: networkAllowAll, families: networkAllFamilies(serviceResource()), obj: odd,
			want: `
kube_service_annotations{uid="u"} 1
kube_service_info{uid="u"} 1
kube_service_labels{uid="u"} 1
kube_service_spec_external_ip{uid="u"} 1
kube_service_spec_type{uid="u"} 1
kube_service_status_load_balancer_ingress{uid="u"} 1
`,
		},
	})
}
