package watch

import (
	"context"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// endpointSliceResource describes endpoint slices: kube-state-metrics'
// internal/store/endpointslice.go.
func endpointSliceResource() *Resource {
	return newResource("endpointslices", true, &discoveryv1.EndpointSlice{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.DiscoveryV1().EndpointSlices(ns).Watch(ctx, o)
		},
		func(s *discoveryv1.EndpointSlice, e *Emitter) {
			e.Identity("endpointslice", s.Name, "namespace", s.Namespace)
		},
		endpointSliceFamilies,
	)
}

// endpointSliceFamilies lists the endpoint slice families, in
// kube-state-metrics' order.
func endpointSliceFamilies(o FamilyOptions) []Family[*discoveryv1.EndpointSlice] {
	type S = *discoveryv1.EndpointSlice
	return []Family[S]{
		{
			Name: "kube_endpointslice_info", Help: "Information about endpointslice.",
			Type: Gauge, Stability: Alpha,
			Generate: func(s S, e *Emitter) { e.Emit(1, "addresstype", string(s.AddressType)) },
		},
		{
			Name: "kube_endpointslice_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[S],
		},
		{
			Name: "kube_endpointslice_endpoints_hints", Help: "Topology routing hints attached to endpoints",
			Type: Gauge, Stability: Alpha, Generate: endpointSliceHints,
		},
		{
			Name: "kube_endpointslice_endpoints", Help: "Endpoints attached to the endpointslice.",
			Type: Gauge, Stability: Alpha, Generate: endpointSliceEndpoints,
		},
		{
			Name: "kube_endpointslice_ports", Help: "Ports attached to the endpointslice.",
			Type: Gauge, Stability: Alpha, Generate: endpointSlicePorts,
		},
		{
			Name: "kube_endpointslice_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[S], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_endpointslice_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[S], o.LabelsAllowlist),
		},
	}
}

// endpointSliceHints renders one series per zone hint of each endpoint,
// labelled with the endpoint's first address only (its addresses are
// fungible). Endpoints without zone hints or without addresses render
// nothing; node hints are not exported.
func endpointSliceHints(s *discoveryv1.EndpointSlice, e *Emitter) {
	for _, ep := range s.Endpoints {
		if ep.Hints == nil || len(ep.Addresses) == 0 {
			continue
		}
		for _, z := range ep.Hints.ForZones {
			e.Emit(1, "address", ep.Addresses[0], "for_zone", z.Name)
		}
	}
}

// endpointSliceEndpoints renders one series per address of each endpoint,
// with the endpoint's conditions, target and topology; unset optional fields
// leave their labels empty.
func endpointSliceEndpoints(s *discoveryv1.EndpointSlice, e *Emitter) {
	for _, ep := range s.Endpoints {
		ref := valueOrZero(ep.TargetRef)
		kv := []string{
			"ready", optionalBoolString(ep.Conditions.Ready),
			"serving", optionalBoolString(ep.Conditions.Serving),
			"hostname", valueOrZero(ep.Hostname),
			"terminating", optionalBoolString(ep.Conditions.Terminating),
			"targetref_kind", ref.Kind,
			"targetref_name", ref.Name,
			"targetref_namespace", ref.Namespace,
			"endpoint_nodename", valueOrZero(ep.NodeName),
			"endpoint_zone", valueOrZero(ep.Zone),
			"address", "",
		}
		for _, a := range ep.Addresses {
			kv[len(kv)-1] = a
			e.Emit(1, kv...)
		}
	}
}

// endpointSlicePorts renders one series per port. Every field of a slice
// port is optional (a slice may omit the port number), so each missing one
// leaves its label empty.
func endpointSlicePorts(s *discoveryv1.EndpointSlice, e *Emitter) {
	for _, p := range s.Ports {
		number := ""
		if p.Port != nil {
			number = strconv.FormatInt(int64(*p.Port), 10)
		}
		e.Emit(1, portLabels(valueOrZero(p.Name), string(valueOrZero(p.Protocol)), number)...)
	}
}

// valueOrZero returns *p, or the zero value when p is nil: an unset optional
// field renders as an empty label, as in kube-state-metrics.
func valueOrZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// optionalBoolString formats an optional bool as "true" or "false", and an
// unset one as "".
func optionalBoolString(p *bool) string {
	if p == nil {
		return ""
	}
	return strconv.FormatBool(*p)
}
