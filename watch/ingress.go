package watch

import (
	"context"
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ingressResource describes ingresses: kube-state-metrics'
// internal/store/ingress.go.
func ingressResource() *Resource {
	return newResource("ingresses", true, &networkingv1.Ingress{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.NetworkingV1().Ingresses(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.NetworkingV1().Ingresses(ns).Watch(ctx, o)
		},
		func(i *networkingv1.Ingress, e *Emitter) {
			e.Identity("namespace", i.Namespace, "ingress", i.Name)
		},
		ingressFamilies,
	)
}

// ingressFamilies lists the ingress families, in kube-state-metrics' order.
func ingressFamilies(o FamilyOptions) []Family[*networkingv1.Ingress] {
	type I = *networkingv1.Ingress
	return []Family[I]{
		{
			Name: "kube_ingress_info", Help: "Information about ingress.",
			Type: Gauge, Stability: Stable,
			Generate: func(i I, e *Emitter) { e.Emit(1, "ingressclass", ingressClassOf(i)) },
		},
		{
			Name: "kube_ingress_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[I], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_ingress_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[I], o.LabelsAllowlist),
		},
		{
			Name: "kube_ingress_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[I],
		},
		{
			Name: "kube_ingress_metadata_resource_version", Help: "Resource version representing a specific version of ingress.",
			Type: Gauge, Stability: Alpha, Generate: emitResourceVersion[I],
		},
		{
			Name: "kube_ingress_path", Help: "Ingress host, paths and backend service information.",
			Type: Gauge, Stability: Stable, Generate: ingressPaths,
		},
		{
			Name: "kube_ingress_tls", Help: "Ingress TLS host and secret information.",
			Type: Gauge, Stability: Stable, Generate: ingressTLS,
		},
	}
}

// ingressClassAnnotation is the legacy annotation naming an ingress's class.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// ingressClassOf returns the ingressclass label: the legacy annotation when
// present (even empty), else spec.ingressClassName, else "_default".
func ingressClassOf(i *networkingv1.Ingress) string {
	if c, ok := i.Annotations[ingressClassAnnotation]; ok {
		return c
	}
	if i.Spec.IngressClassName != nil {
		return *i.Spec.IngressClassName
	}
	return "_default"
}

// ingressPaths renders one series per HTTP path of each rule; rules without
// HTTP paths render nothing.
func ingressPaths(i *networkingv1.Ingress, e *Emitter) {
	for _, r := range i.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			emitIngressPath(e, r.Host, &p)
		}
	}
}

// emitIngressPath renders a path with its service backend (name and port
// number; a port given by name renders as "0", as in kube-state-metrics) or,
// failing that, its resource backend. A path with neither, which the API
// server rejects, renders with empty resource labels.
func emitIngressPath(e *Emitter, host string, p *networkingv1.HTTPIngressPath) {
	kv := []string{"host", host, "path", p.Path, "path_type", string(valueOrZero(p.PathType))}
	if svc := p.Backend.Service; svc != nil {
		e.Emit(1, append(kv, "service_name", svc.Name, "service_port", strconv.Itoa(int(svc.Port.Number)))...)
		return
	}
	res := valueOrZero(p.Backend.Resource)
	e.Emit(1, append(kv, "resource_api_group", valueOrZero(res.APIGroup), "resource_kind", res.Kind, "resource_name", res.Name)...)
}

// ingressTLS renders one series per host of each TLS entry.
func ingressTLS(i *networkingv1.Ingress, e *Emitter) {
	for _, t := range i.Spec.TLS {
		for _, h := range t.Hosts {
			e.Emit(1, "tls_host", h, "secret", t.SecretName)
		}
	}
}
