package testenv

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// networkFixtureTime is the time written into status conditions, so that
// the fixtures render the same series on every run.
var networkFixtureTime = metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))

// networkFixtureFinalizer keeps a deleted fixture in place, with its
// deletion timestamp set, since no controller ever removes it.
const networkFixtureFinalizer = "fixtures.kube-state-push.invalid/network-hold"

// The core/v1 Endpoints API is deprecated, but kube-state-metrics still
// exports it; the aliases keep the deprecation notice to these lines.
type (
	networkEndpoints       = v1.Endpoints       //nolint:staticcheck // deprecated API, still exported by kube-state-metrics
	networkEndpointSubset  = v1.EndpointSubset  //nolint:staticcheck // idem
	networkEndpointAddress = v1.EndpointAddress //nolint:staticcheck // idem
	networkEndpointPort    = v1.EndpointPort    //nolint:staticcheck // idem
)

// FixturesNetwork creates objects that exercise every family of the network
// resources: in ns, services of every type (one with load balancer status,
// one being deleted), endpoints, endpoint slices of every address type,
// ingresses with service and resource backends, TLS and each way of naming
// a class, and network policies; cluster-scoped, named with ns as a prefix,
// ingress classes and the namespaces ns-extra (labelled, annotated, with
// status conditions) and ns-terminating (deleted, so Terminating for good:
// no namespace controller runs).
//
// No controller runs, so services get no endpoints or slices of their own:
// the ones created here are all there are. Only the deletion timestamps and
// the API server's allocations (cluster IPs, node ports) vary between runs.
func FixturesNetwork(ctx context.Context, c kubernetes.Interface, ns string) error {
	for _, step := range []func(context.Context, kubernetes.Interface, string) error{
		createNetworkServices,
		createNetworkEndpoints,
		createNetworkEndpointSlices,
		createNetworkIngressClasses,
		createNetworkIngresses,
		createNetworkPolicies,
		createNetworkNamespaces,
	} {
		if err := step(ctx, c, ns); err != nil {
			return err
		}
	}
	return nil
}

// createNetworkServices creates a ClusterIP service with external IPs, a
// NodePort, a LoadBalancer with ingress points in its status, an
// ExternalName, a headless service and one left Terminating.
func createNetworkServices(ctx context.Context, c kubernetes.Interface, ns string) error {
	svcs := c.CoreV1().Services(ns)
	web := &v1.Service{
		ObjectMeta: networkMeta(ns, "web"),
		Spec: v1.ServiceSpec{
			Type:        v1.ServiceTypeClusterIP,
			Selector:    map[string]string{"app": "web"},
			Ports:       []v1.ServicePort{networkServicePort("http", 80, 8080), networkServicePort("https", 443, 8443)},
			ExternalIPs: []string{"192.0.2.10", "192.0.2.11"},
		},
	}
	nodePort := networkService(ns, "nodeport", v1.ServiceTypeNodePort)
	nodePort.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	lb := networkService(ns, "lb", v1.ServiceTypeLoadBalancer)
	lb.Spec.LoadBalancerIP = "198.51.100.7" //nolint:staticcheck // deprecated field, still read by kube_service_info
	lb.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{
		{IP: "203.0.113.10"},
		{Hostname: "lb.example.com"},
		{IP: "203.0.113.11", Hostname: "lb2.example.com"},
	}
	external := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "external", Namespace: ns},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.com"},
	}
	headless := networkService(ns, "headless", v1.ServiceTypeClusterIP)
	headless.Spec.ClusterIP = v1.ClusterIPNone
	deleting := networkService(ns, "deleting", v1.ServiceTypeClusterIP)
	deleting.Finalizers = []string{networkFixtureFinalizer}

	if err := createNetworkObjects(ctx, svcs.Create, web, nodePort, external, headless, deleting); err != nil {
		return err
	}
	if err := createNetworkWithStatus(ctx, svcs.Create, svcs.UpdateStatus, lb); err != nil {
		return err
	}
	if err := svcs.Delete(ctx, deleting.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting service %s/%s: %w", ns, deleting.Name, err)
	}
	return nil
}

// networkService is a service of the given type selecting app=name, with
// one port.
func networkService(ns, name string, t v1.ServiceType) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ServiceSpec{
			Type:     t,
			Selector: map[string]string{"app": name},
			Ports:    []v1.ServicePort{networkServicePort("http", 80, 8080)},
		},
	}
}

func networkServicePort(name string, port, target int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Protocol: v1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(target)}
}

// createNetworkEndpoints creates endpoints with ready and not-ready
// addresses over several ports, a subset with one unnamed UDP port, and
// endpoints without subsets.
func createNetworkEndpoints(ctx context.Context, c kubernetes.Interface, ns string) error {
	web := &networkEndpoints{
		ObjectMeta: networkMeta(ns, "web"),
		Subsets: []networkEndpointSubset{
			{
				Addresses:         networkEndpointAddresses("10.1.0.5", "10.1.0.6"),
				NotReadyAddresses: networkEndpointAddresses("10.1.0.7"),
				Ports: []networkEndpointPort{
					{Name: "http", Port: 8080, Protocol: v1.ProtocolTCP},
					{Name: "https", Port: 8443, Protocol: v1.ProtocolTCP},
				},
			},
			{
				Addresses: networkEndpointAddresses("10.1.1.5"),
				Ports:     []networkEndpointPort{{Port: 53, Protocol: v1.ProtocolUDP}},
			},
		},
	}
	empty := &networkEndpoints{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns}}
	return createNetworkObjects(ctx, c.CoreV1().Endpoints(ns).Create, web, empty)
}

func networkEndpointAddresses(ips ...string) []networkEndpointAddress {
	out := make([]networkEndpointAddress, len(ips))
	for i, ip := range ips {
		out[i].IP = ip
	}
	return out
}

// createNetworkEndpointSlices creates an IPv4 slice whose endpoints have
// every optional field set, partly set or unset (with zone hints, and a
// port without number), an IPv6 slice and an FQDN slice.
func createNetworkEndpointSlices(ctx context.Context, c kubernetes.Interface, ns string) error {
	ipv4 := &discoveryv1.EndpointSlice{
		ObjectMeta:  networkSliceMeta(ns, "web-ipv4"),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{
				Addresses:  []string{"10.1.0.5", "10.1.0.6"},
				Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
				Hostname:   new("web-0"),
				TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0"},
				NodeName:   new(ns + "-node-a"),
				Zone:       new("zone-a"),
				Hints:      &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}, {Name: "zone-b"}}},
			},
			{
				Addresses:  []string{"10.1.0.7"},
				Conditions: discoveryv1.EndpointConditions{Ready: new(false), Serving: new(false), Terminating: new(true)},
				TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-1"},
				Zone:       new("zone-b"),
			},
			{Addresses: []string{"10.1.0.8"}},
		},
		Ports: []discoveryv1.EndpointPort{
			{Name: new("http"), Protocol: new(v1.ProtocolTCP), Port: new(int32(8080))},
			{Name: new("any"), Protocol: new(v1.ProtocolUDP)},
		},
	}
	ipv6 := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-ipv6", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"fd00::5"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Port: new(int32(80))}},
	}
	fqdn := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "external-fqdn", Namespace: ns},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"db.example.com"}}},
	}
	return createNetworkObjects(ctx, c.DiscoveryV1().EndpointSlices(ns).Create, ipv4, ipv6, fqdn)
}

// networkSliceMeta is networkMeta for a slice of the web service.
func networkSliceMeta(ns, name string) metav1.ObjectMeta {
	m := networkMeta(ns, name)
	m.Labels[discoveryv1.LabelServiceName] = "web"
	return m
}

// createNetworkIngressClasses creates a labelled, annotated class and a
// bare one. Neither is the default class: the DefaultIngressClass admission
// plugin would then give it to every ingress without one, other runs'
// included.
func createNetworkIngressClasses(ctx context.Context, c kubernetes.Interface, ns string) error {
	full := &networkingv1.IngressClass{
		ObjectMeta: networkMeta("", ns+"-nginx"),
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/ingress-nginx"},
	}
	full.Annotations[networkingv1.AnnotationIsDefaultIngressClass] = "false"
	plain := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-plain"},
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/plain"},
	}
	return createNetworkObjects(ctx, c.NetworkingV1().IngressClasses().Create, full, plain)
}

// createNetworkIngresses creates an ingress with a class name, paths of
// every type to services (by port number and name) and to a resource, a
// rule without paths and TLS; one naming its class by the legacy
// annotation; and one with no class at all.
func createNetworkIngresses(ctx context.Context, c kubernetes.Interface, ns string) error {
	web := &networkingv1.Ingress{
		ObjectMeta: networkMeta(ns, "web"),
		Spec: networkingv1.IngressSpec{
			IngressClassName: new(ns + "-nginx"),
			Rules: []networkingv1.IngressRule{
				networkIngressRule("web.example.com",
					networkIngressPath("/", networkingv1.PathTypePrefix, networkServiceBackend("web", networkingv1.ServiceBackendPort{Number: 80})),
					networkIngressPath("/api", networkingv1.PathTypeExact, networkServiceBackend("web", networkingv1.ServiceBackendPort{Name: "https"})),
					networkIngressPath("/assets", networkingv1.PathTypeImplementationSpecific, networkingv1.IngressBackend{
						Resource: &v1.TypedLocalObjectReference{APIGroup: new("storage.example.com"), Kind: "Bucket", Name: "assets"},
					}),
				),
				{Host: "bare.example.com"},
			},
			TLS: []networkingv1.IngressTLS{
				{Hosts: []string{"web.example.com", "www.example.com"}, SecretName: "web-tls"},
				{Hosts: []string{"api.example.com"}},
			},
		},
	}
	legacy := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name: "legacy", Namespace: ns,
			Annotations: map[string]string{"kubernetes.io/ingress.class": "traefik"},
		},
		Spec: networkingv1.IngressSpec{
			DefaultBackend: new(networkServiceBackend("web", networkingv1.ServiceBackendPort{Number: 80})),
		},
	}
	classless := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "classless", Namespace: ns},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{networkIngressRule("",
			networkIngressPath("/", networkingv1.PathTypePrefix, networkServiceBackend("web", networkingv1.ServiceBackendPort{Number: 80})),
		)}},
	}
	return createNetworkObjects(ctx, c.NetworkingV1().Ingresses(ns).Create, web, legacy, classless)
}

func networkIngressRule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{
		Host:             host,
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}},
	}
}

func networkIngressPath(path string, t networkingv1.PathType, b networkingv1.IngressBackend) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: path, PathType: &t, Backend: b}
}

func networkServiceBackend(name string, port networkingv1.ServiceBackendPort) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: port}}
}

// createNetworkPolicies creates a policy with two ingress rules and one
// egress rule, and a deny-all policy with none.
func createNetworkPolicies(ctx context.Context, c kubernetes.Interface, ns string) error {
	allPolicyTypes := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	web := &networkingv1.NetworkPolicy{
		ObjectMeta: networkMeta(ns, "web-allow"),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
					Ports: []networkingv1.NetworkPolicyPort{networkPolicyPort(v1.ProtocolTCP, 8080)},
				},
				{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}},
			},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
				Ports: []networkingv1.NetworkPolicyPort{networkPolicyPort(v1.ProtocolUDP, 53)},
			}},
			PolicyTypes: allPolicyTypes,
		},
	}
	denyAll := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-all", Namespace: ns},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: allPolicyTypes},
	}
	return createNetworkObjects(ctx, c.NetworkingV1().NetworkPolicies(ns).Create, web, denyAll)
}

func networkPolicyPort(p v1.Protocol, port int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: &p, Port: new(intstr.FromInt32(port))}
}

// createNetworkNamespaces creates ns-extra, labelled and annotated, with
// conditions in its status, and ns-terminating, deleted and given a
// condition as the namespace controller would when it fails to empty it.
func createNetworkNamespaces(ctx context.Context, c kubernetes.Interface, ns string) error {
	nss := c.CoreV1().Namespaces()
	extra := &v1.Namespace{ObjectMeta: networkMeta("", ns+"-extra")}
	extra.Status = v1.NamespaceStatus{
		Phase: v1.NamespaceActive,
		Conditions: []v1.NamespaceCondition{
			networkNamespaceCondition(v1.NamespaceDeletionDiscoveryFailure, v1.ConditionFalse, "ResourcesDiscovered"),
			networkNamespaceCondition(v1.NamespaceContentRemaining, v1.ConditionUnknown, "Unknown"),
		},
	}
	if err := createNetworkWithStatus(ctx, nss.Create, nss.UpdateStatus, extra); err != nil {
		return err
	}

	name := ns + "-terminating"
	if err := createNetworkObjects(ctx, nss.Create, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return err
	}
	if err := nss.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	terminating, err := nss.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	terminating.Status.Conditions = []v1.NamespaceCondition{
		networkNamespaceCondition(v1.NamespaceDeletionContentFailure, v1.ConditionTrue, "ContentDeletionFailed"),
	}
	if _, err := nss.UpdateStatus(ctx, terminating, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of namespace %s: %w", name, err)
	}
	return nil
}

func networkNamespaceCondition(t v1.NamespaceConditionType, s v1.ConditionStatus, reason string) v1.NamespaceCondition {
	return v1.NamespaceCondition{Type: t, Status: s, Reason: reason, Message: "fixture", LastTransitionTime: networkFixtureTime}
}

// networkMeta is the metadata of the fully described objects: labels and
// annotations for the _labels and _annotations families (ns is "" for
// cluster-scoped objects).
func networkMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels:      map[string]string{"app.kubernetes.io/name": name, "tier": "network"},
		Annotations: map[string]string{"fixtures.kube-state-push.invalid/group": "network", "owner": "netops"},
	}
}

// createNetworkObjects creates each object with create, naming the failing
// one in the error.
func createNetworkObjects[T metav1.Object](ctx context.Context, create func(context.Context, T, metav1.CreateOptions) (T, error), objs ...T) error {
	for _, o := range objs {
		if _, err := create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, networkObjectName(o), err)
		}
	}
	return nil
}

// createNetworkWithStatus creates obj, then writes the status it holds
// (which create ignores).
func createNetworkWithStatus[T metav1.Object](
	ctx context.Context,
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	updateStatus func(context.Context, T, metav1.UpdateOptions) (T, error),
	obj T,
) error {
	created, err := create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating %T %s: %w", obj, networkObjectName(obj), err)
	}
	obj.SetUID(created.GetUID())
	obj.SetResourceVersion(created.GetResourceVersion())
	if _, err := updateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of %T %s: %w", obj, networkObjectName(obj), err)
	}
	return nil
}

func networkObjectName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
