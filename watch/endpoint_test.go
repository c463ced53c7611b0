package watch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// coreEndpointSubset keeps the deprecation notice of the API to this line.
type coreEndpointSubset = v1.EndpointSubset //nolint:staticcheck // see coreEndpoints

// testEndpoints returns endpoints in namespace default created at 1.5e9,
// labelled and annotated app=<app>, with the given subsets.
func testEndpoints(name, app string, subsets ...coreEndpointSubset) *coreEndpoints {
	return &coreEndpoints{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: "uid-" + types.UID(name),
			CreationTimestamp: metav1.Time{Time: time.Unix(1500000000, 0)},
			Labels:            map[string]string{"app": app},
			Annotations:       map[string]string{"app": app},
		},
		Subsets: subsets,
	}
}

func endpointAddrs(ips ...string) []coreEndpointAddress {
	out := make([]coreEndpointAddress, len(ips))
	for i, ip := range ips {
		out[i].IP = ip
	}
	return out
}

// TestEndpointsKSMCases ports kube-state-metrics' TestEndpointStore and
// TestEndpointStoreWithLabels.
func TestEndpointsKSMCases(t *testing.T) {
	multi := testEndpoints("test-endpoint", "foobar",
		coreEndpointSubset{
			Addresses:         endpointAddrs("127.0.0.1", "10.0.0.1"),
			NotReadyAddresses: endpointAddrs("10.0.0.10"),
			Ports:             []coreEndpointPort{{Port: 8080, Name: "http", Protocol: v1.ProtocolTCP}, {Port: 8081, Name: "app", Protocol: v1.ProtocolTCP}},
		},
		coreEndpointSubset{
			Addresses: endpointAddrs("172.22.23.202"),
			Ports:     []coreEndpointPort{{Port: 8443, Name: "https", Protocol: v1.ProtocolTCP}, {Port: 9090, Name: "prometheus", Protocol: v1.ProtocolTCP}},
		},
		coreEndpointSubset{
			NotReadyAddresses: endpointAddrs("192.168.1.3", "192.168.2.2"),
			Ports:             []coreEndpointPort{{Port: 1234, Name: "syslog", Protocol: v1.ProtocolUDP}, {Port: 5678, Name: "syslog-tcp", Protocol: v1.ProtocolTCP}},
		},
	)
	single := testEndpoints("single-port-endpoint", "single-foobar", coreEndpointSubset{
		Addresses:         endpointAddrs("127.0.0.1", "10.0.0.1"),
		NotReadyAddresses: endpointAddrs("10.0.0.10"),
		Ports:             []coreEndpointPort{{Port: 8080, Protocol: v1.ProtocolTCP}},
	})
	const multiWant = `
kube_endpoint_created{endpoint="test-endpoint",namespace="default"} 1.5e+09
kube_endpoint_info{endpoint="test-endpoint",namespace="default"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="10.0.0.1",namespace="default",port_name="app",port_number="8081",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="10.0.0.1",namespace="default",port_name="http",port_number="8080",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="10.0.0.10",namespace="default",port_name="app",port_number="8081",port_protocol="TCP",ready="false"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="10.0.0.10",namespace="default",port_name="http",port_number="8080",port_protocol="TCP",ready="false"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="127.0.0.1",namespace="default",port_name="app",port_number="8081",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="127.0.0.1",namespace="default",port_name="http",port_number="8080",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="172.22.23.202",namespace="default",port_name="https",port_number="8443",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="172.22.23.202",namespace="default",port_name="prometheus",port_number="9090",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="192.168.1.3",namespace="default",port_name="syslog",port_number="1234",port_protocol="UDP",ready="false"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="192.168.1.3",namespace="default",port_name="syslog-tcp",port_number="5678",port_protocol="TCP",ready="false"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="192.168.2.2",namespace="default",port_name="syslog",port_number="1234",port_protocol="UDP",ready="false"} 1
kube_endpoint_address{endpoint="test-endpoint",ip="192.168.2.2",namespace="default",port_name="syslog-tcp",port_number="5678",port_protocol="TCP",ready="false"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="http",port_number="8080",port_protocol="TCP"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="app",port_number="8081",port_protocol="TCP"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="https",port_number="8443",port_protocol="TCP"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="prometheus",port_number="9090",port_protocol="TCP"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="syslog",port_number="1234",port_protocol="UDP"} 1
kube_endpoint_ports{endpoint="test-endpoint",namespace="default",port_name="syslog-tcp",port_number="5678",port_protocol="TCP"} 1
`
	// KSM prints port_name="" for an unnamed port; Prometheus drops it.
	const singleWant = `
kube_endpoint_created{endpoint="single-port-endpoint",namespace="default"} 1.5e+09
kube_endpoint_info{endpoint="single-port-endpoint",namespace="default"} 1
kube_endpoint_ports{endpoint="single-port-endpoint",namespace="default",port_number="8080",port_protocol="TCP"} 1
kube_endpoint_address{endpoint="single-port-endpoint",ip="10.0.0.1",namespace="default",port_number="8080",port_protocol="TCP",ready="true"} 1
kube_endpoint_address{endpoint="single-port-endpoint",ip="10.0.0.10",namespace="default",port_number="8080",port_protocol="TCP",ready="false"} 1
kube_endpoint_address{endpoint="single-port-endpoint",ip="127.0.0.1",namespace="default",port_number="8080",port_protocol="TCP",ready="true"} 1
`
	allowApp := FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"app"}}
	runNetworkCases(t, endpointsResource, []networkCase[*coreEndpoints]{
		{name: "subsets", obj: multi, want: multiWant},
		{name: "single unnamed port", obj: single, want: singleWant},
		{
			name: "subsets with labels", obj: multi, opts: allowApp,
			want: multiWant + `
kube_endpoint_annotations{annotation_app="foobar",endpoint="test-endpoint",namespace="default"} 1
kube_endpoint_labels{endpoint="test-endpoint",label_app="foobar",namespace="default"} 1
`,
		},
		{
			name: "single unnamed port with labels", obj: single, opts: allowApp,
			want: singleWant + `
kube_endpoint_annotations{annotation_app="single-foobar",endpoint="single-port-endpoint",namespace="default"} 1
kube_endpoint_labels{endpoint="single-port-endpoint",label_app="single-foobar",namespace="default"} 1
`,
		},
	})
}

func TestEndpointsFamilyHelp(t *testing.T) {
	fs := endpointsResource().Families(FamilyOptions{})
	require.Len(t, fs, 6)
	require.Equal(t, "kube_endpoint_ports", fs[5].Name)
	require.Equal(t, "(Deprecated since v2.14.0) Information about the Endpoint ports.", fs[5].Help)
	require.Equal(t, Stable, fs[5].Stability)
}

// TestEndpointsMalformed renders every family of endpoints with missing
// fields: subsets without ports render no addresses, a port without number
// is port 0.
func TestEndpointsMalformed(t *testing.T) {
	odd := &coreEndpoints{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	odd.Subsets = []coreEndpointSubset{
		{Addresses: endpointAddrs("10.0.0.1")},
		{Addresses: endpointAddrs(""), Ports: []coreEndpointPort{{}}},
		{},
	}
	all := networkAllFamilies(endpointsResource())
	runNetworkCases(t, endpointsResource, []networkCase[*coreEndpoints]{
		{
			name: "empty", opts: networkAllowAll, families: all,
			obj: &coreEndpoints{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
			want: `
kube_endpoint_annotations{} 1
kube_endpoint_info{} 1
kube_endpoint_labels{} 1
`,
		},
		{
			name: "empty entries", opts: networkAllowAll, families: all, obj: odd,
			want: `
kube_endpoint_address{port_number="0",ready="true"} 1
kube_endpoint_annotations{} 1
kube_endpoint_info{} 1
kube_endpoint_labels{} 1
kube_endpoint_ports{port_number="0"} 1
`,
		},
	})
}
