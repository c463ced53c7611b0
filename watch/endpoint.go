package watch

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The core/v1 Endpoints API is deprecated in favour of EndpointSlice, but
// kube-state-metrics still exports it (when asked to), so we do too. The
// aliases keep the deprecation notice to these lines.
type (
	coreEndpoints       = v1.Endpoints       //nolint:staticcheck // deprecated API, still exported by kube-state-metrics
	coreEndpointAddress = v1.EndpointAddress //nolint:staticcheck // idem
	coreEndpointPort    = v1.EndpointPort    //nolint:staticcheck // idem
)

// endpointsResource describes core/v1 endpoints: kube-state-metrics'
// internal/store/endpoint.go.
func endpointsResource() *Resource {
	return newResource("endpoints", true, &coreEndpoints{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().Endpoints(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().Endpoints(ns).Watch(ctx, o)
		},
		func(ep *coreEndpoints, e *Emitter) {
			e.Identity("namespace", ep.Namespace, "endpoint", ep.Name)
		},
		endpointsFamilies,
	)
}

// endpointsFamilies lists the endpoints families, in kube-state-metrics'
// order, then the v1 families the options name.
func endpointsFamilies(o FamilyOptions) []Family[*coreEndpoints] {
	type E = *coreEndpoints
	return append([]Family[E]{
		{
			Name: "kube_endpoint_info", Help: "Information about endpoint.",
			Type: Gauge, Stability: Stable,
			Generate: func(_ E, e *Emitter) { e.Emit(1) },
		},
		{
			Name: "kube_endpoint_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[E],
		},
		{
			Name: "kube_endpoint_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[E], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_endpoint_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[E], o.LabelsAllowlist),
		},
		{
			Name: "kube_endpoint_address", Help: "Information about Endpoint available and non available addresses.",
			Type: Gauge, Stability: Stable, Generate: endpointsAddresses,
		},
		{
			// kube-state-metrics deprecated this family in v2.14.0 and says so
			// in its HELP text.
			Name: "kube_endpoint_ports", Help: "(Deprecated since v2.14.0) Information about the Endpoint ports.",
			Type: Gauge, Stability: Stable, Generate: endpointsPorts,
		},
	}, legacyV1(o, endpointsLegacyV1Families)...)
}

// endpointsAddresses renders one series per port and address of each
// subset, ready addresses first. A subset without ports renders nothing,
// whatever its addresses.
func endpointsAddresses(ep *coreEndpoints, e *Emitter) {
	for _, s := range ep.Subsets {
		for _, p := range s.Ports {
			port := []string{"port_protocol", string(p.Protocol), "port_number", strconv.FormatInt(int64(p.Port), 10), "port_name", p.Name}
			emitEndpointsAddresses(e, port, s.Addresses, "true")
			emitEndpointsAddresses(e, port, s.NotReadyAddresses, "false")
		}
	}
}

// emitEndpointsAddresses renders one series per address, with the port's
// labels, the address in ip and the given ready label.
func emitEndpointsAddresses(e *Emitter, port []string, addrs []coreEndpointAddress, ready string) {
	// The capped slice makes append copy: port is shared by both calls.
	kv := append(port[:len(port):len(port)], "ip", "", "ready", ready)
	for _, a := range addrs {
		kv[len(port)+1] = a.IP
		e.Emit(1, kv...)
	}
}

func endpointsPorts(ep *coreEndpoints, e *Emitter) {
	for _, s := range ep.Subsets {
		for _, p := range s.Ports {
			e.Emit(1, endpointsPortLabels(p)...)
		}
	}
}

// endpointsPortLabels returns a port's labels. An endpoints port number is
// not optional, so port_number is always set (0 when missing).
func endpointsPortLabels(p coreEndpointPort) []string {
	return portLabels(p.Name, string(p.Protocol), strconv.FormatInt(int64(p.Port), 10))
}

// portLabels returns the port_name, port_protocol and port_number labels
// that the endpoints and endpoint slice families share.
func portLabels(name, protocol, number string) []string {
	return []string{"port_name", name, "port_protocol", protocol, "port_number", number}
}
