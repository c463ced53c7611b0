package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// serviceResource describes services: kube-state-metrics'
// internal/store/service.go.
func serviceResource() *Resource {
	return newResource("services", true, &v1.Service{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().Services(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().Services(ns).Watch(ctx, o)
		},
		func(s *v1.Service, e *Emitter) {
			e.Identity("namespace", s.Namespace, "service", s.Name, "uid", string(s.UID))
		},
		serviceFamilies,
	)
}

// serviceFamilies lists the service families, in kube-state-metrics' order.
func serviceFamilies(o FamilyOptions) []Family[*v1.Service] {
	return []Family[*v1.Service]{
		{
			Name: "kube_service_info", Help: "Information about service.",
			Type: Gauge, Stability: Stable, Generate: serviceInfo,
		},
		{
			Name: "kube_service_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[*v1.Service],
		},
		{
			// Rendered even for a service without a type (then with no type
			// label), as kube-state-metrics does.
			Name: "kube_service_spec_type", Help: "Type about service.",
			Type: Gauge, Stability: Stable,
			Generate: func(s *v1.Service, e *Emitter) { e.Emit(1, "type", string(s.Spec.Type)) },
		},
		{
			Name: "kube_service_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[*v1.Service], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_service_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[*v1.Service], o.LabelsAllowlist),
		},
		{
			Name: "kube_service_spec_external_ip", Help: "Service external ips. One series for each ip",
			Type: Gauge, Stability: Stable, Generate: serviceExternalIPs,
		},
		{
			Name: "kube_service_status_load_balancer_ingress", Help: "Service load balancer ingress status",
			Type: Gauge, Stability: Stable, Generate: serviceLoadBalancerIngress,
		},
		{
			Name: "kube_service_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[*v1.Service],
		},
	}
}

func serviceInfo(s *v1.Service, e *Emitter) {
	e.Emit(1,
		"cluster_ip", s.Spec.ClusterIP,
		"external_name", s.Spec.ExternalName,
		"load_balancer_ip", s.Spec.LoadBalancerIP,
		"external_traffic_policy", string(s.Spec.ExternalTrafficPolicy),
	)
}

func serviceExternalIPs(s *v1.Service, e *Emitter) {
	for _, ip := range s.Spec.ExternalIPs {
		e.Emit(1, "external_ip", ip)
	}
}

// serviceLoadBalancerIngress renders one series per load balancer ingress
// point; kube-state-metrics exports only its ip and hostname.
func serviceLoadBalancerIngress(s *v1.Service, e *Emitter) {
	for _, in := range s.Status.LoadBalancer.Ingress {
		e.Emit(1, "ip", in.IP, "hostname", in.Hostname)
	}
}
