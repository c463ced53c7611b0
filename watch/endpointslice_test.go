package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testEndpointSlice returns an IPv4 slice in namespace test.
func testEndpointSlice(name string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "test", UID: "uid"},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
}

// TestEndpointSliceKSMCases ports kube-state-metrics' TestEndpointSliceStore,
// TestEndpointSliceHintsPerZone and TestEndpointSliceHintsWithoutAddresses.
func TestEndpointSliceKSMCases(t *testing.T) {
	created := testEndpointSlice("test_kube_endpointslice-created")
	created.CreationTimestamp = metav1.Unix(1501569018, 0)

	ports := testEndpointSlice("test_endpointslice-ports")
	ports.Ports = []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80)), Protocol: new(corev1.ProtocolTCP)}}
	noNumber := testEndpointSlice("test_endpointslice-ports-without-number")
	noNumber.Ports = []discoveryv1.EndpointPort{{Name: new("http"), Protocol: new(corev1.ProtocolTCP)}}

	endpoint := discoveryv1.Endpoint{
		NodeName:   new("node"),
		Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
		Hostname:   new("host"),
		Zone:       new("west"),
		Addresses:  []string{"10.0.0.1", "192.168.1.10"},
	}
	endpoints := testEndpointSlice("test_endpointslice-endpoints")
	endpoints.Endpoints = []discoveryv1.Endpoint{endpoint}
	hinted := testEndpointSlice("test_endpointslice-endpoints")
	endpoint.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone1"}}}
	hinted.Endpoints = []discoveryv1.Endpoint{endpoint}

	labelled := testEndpointSlice("test_endpointslice-labels")
	labelled.Annotations = map[string]string{"foo": "baz"}
	labelled.Labels = map[string]string{"foo": "bar"}

	zones := testEndpointSlice("es")
	zones.Namespace = "ns"
	zones.Endpoints = []discoveryv1.Endpoint{{
		Addresses: []string{"10.0.0.1"},
		Hints:     &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}},
	}}
	noAddresses := testEndpointSlice("es")
	noAddresses.Endpoints = []discoveryv1.Endpoint{{Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}}}

	// KSM prints the unset labels (targetref_*, port_number) as "";
	// Prometheus drops them.
	const endpointsWant = `
kube_endpointslice_endpoints{address="10.0.0.1",endpoint_nodename="node",endpoint_zone="west",endpointslice="test_endpointslice-endpoints",hostname="host",namespace="test",ready="true",serving="true",terminating="false"} 1
kube_endpointslice_endpoints{address="192.168.1.10",endpoint_nodename="node",endpoint_zone="west",endpointslice="test_endpointslice-endpoints",hostname="host",namespace="test",ready="true",serving="true",terminating="false"} 1
`
	bothEndpointFamilies := []string{"kube_endpointslice_endpoints", "kube_endpointslice_endpoints_hints"}
	runNetworkCases(t, endpointSliceResource, []networkCase[*discoveryv1.EndpointSlice]{
		{
			name: "info", obj: testEndpointSlice("test_endpointslice-info"), families: []string{"kube_endpointslice_info"},
			want: `kube_endpointslice_info{addresstype="IPv4",endpointslice="test_endpointslice-info",namespace="test"} 1`,
		},
		{
			name: "created", obj: created, families: []string{"kube_endpointslice_created"},
			want: `kube_endpointslice_created{endpointslice="test_kube_endpointslice-created",namespace="test"} 1.501569018e+09`,
		},
		{
			name: "ports", obj: ports, families: []string{"kube_endpointslice_ports"},
			want: `kube_endpointslice_ports{endpointslice="test_endpointslice-ports",namespace="test",port_name="http",port_number="80",port_protocol="TCP"} 1`,
		},
		{
			name: "port without number", obj: noNumber, families: []string{"kube_endpointslice_ports"},
			want: `kube_endpointslice_ports{endpointslice="test_endpointslice-ports-without-number",namespace="test",port_name="http",port_protocol="TCP"} 1`,
		},
		{name: "endpoints", obj: endpoints, families: bothEndpointFamilies, want: endpointsWant},
		{
			name: "endpoints with hints", obj: hinted, families: bothEndpointFamilies,
			want: endpointsWant + `kube_endpointslice_endpoints_hints{address="10.0.0.1",endpointslice="test_endpointslice-endpoints",for_zone="zone1",namespace="test"} 1`,
		},
		{
			name: "annotations allowlist", obj: labelled, opts: FamilyOptions{AnnotationsAllowlist: []string{"foo"}},
			families: []string{"kube_endpointslice_annotations", "kube_endpointslice_labels"},
			want:     `kube_endpointslice_annotations{annotation_foo="baz",endpointslice="test_endpointslice-labels",namespace="test"} 1`,
		},
		{
			name: "one hint series per zone", obj: zones, families: []string{"kube_endpointslice_endpoints_hints"},
			want: `
kube_endpointslice_endpoints_hints{address="10.0.0.1",endpointslice="es",for_zone="zone-a",namespace="ns"} 1
kube_endpointslice_endpoints_hints{address="10.0.0.1",endpointslice="es",for_zone="zone-b",namespace="ns"} 1
kube_endpointslice_endpoints_hints{address="10.0.0.1",endpointslice="es",for_zone="zone-c",namespace="ns"} 1
`,
		},
		{name: "hints without addresses", obj: noAddresses, families: bothEndpointFamilies, want: ``},
	})
}

func TestEndpointSliceEndpoints(t *testing.T) {
	s := testEndpointSlice("web-abc")
	s.Endpoints = []discoveryv1.Endpoint{
		{
			// Only the first address is in the hint series; node hints are
			// not exported.
			Addresses:  []string{"10.0.0.7", "10.0.0.8"},
			Conditions: discoveryv1.EndpointConditions{Ready: new(false), Terminating: new(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: "web-1", Namespace: "test"},
			Hints: &discoveryv1.EndpointHints{
				ForZones: []discoveryv1.ForZone{{Name: "z1"}},
				ForNodes: []discoveryv1.ForNode{{Name: "n1"}},
			},
		},
		{Addresses: []string{"10.0.0.9"}, Hints: &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: "n1"}}}},
	}
	runNetworkCases(t, endpointSliceResource, []networkCase[*discoveryv1.EndpointSlice]{{
		name: "target refs and hints", obj: s,
		want: `
kube_endpointslice_endpoints_hints{address="10.0.0.7",endpointslice="web-abc",for_zone="z1",namespace="test"} 1
kube_endpointslice_endpoints{address="10.0.0.7",endpointslice="web-abc",namespace="test",ready="false",targetref_kind="Pod",targetref_name="web-1",targetref_namespace="test",terminating="true"} 1
kube_endpointslice_endpoints{address="10.0.0.8",endpointslice="web-abc",namespace="test",ready="false",targetref_kind="Pod",targetref_name="web-1",targetref_namespace="test",terminating="true"} 1
kube_endpointslice_endpoints{address="10.0.0.9",endpointslice="web-abc",namespace="test"} 1
kube_endpointslice_info{addresstype="IPv4",endpointslice="web-abc",namespace="test"} 1
`,
	}})
}

// TestEndpointSliceMalformed renders every family of slices with missing
// fields: nil pointers leave labels empty, endpoints without addresses
// render nothing.
func TestEndpointSliceMalformed(t *testing.T) {
	odd := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	odd.Endpoints = []discoveryv1.Endpoint{{}, {Addresses: []string{""}, Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{}}}}}
	odd.Ports = []discoveryv1.EndpointPort{{}}
	all := networkAllFamilies(endpointSliceResource())
	runNetworkCases(t, endpointSliceResource, []networkCase[*discoveryv1.EndpointSlice]{
		{
			name: "empty", opts: networkAllowAll, families: all,
			obj: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			want: `
kube_endpointslice_annotations{} 1
kube_endpointslice_info{} 1
kube_endpointslice_labels{} 1
`,
		},
		{
			name: "empty entries", opts: networkAllowAll, families: all, obj: odd,
			want: `
kube_endpointslice_annotations{} 1
kube_endpointslice_endpoints_hints{} 1
kube_endpointslice_endpoints{} 1
kube_endpointslice_info{} 1
kube_endpointslice_labels{} 1
kube_endpointslice_ports{} 1
`,
		},
	})
}
