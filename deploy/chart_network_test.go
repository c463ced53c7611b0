package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The chart's NetworkPolicy admits only the sources its values name: none
// by default, ingressFrom's peers to the agent's ports (the pull port
// with pull on), or the ingress rules given whole. Egress is restricted
// only by rules given.
func TestChartNetworkPolicy(t *testing.T) {
	policy := func(t *testing.T, values string) *networkingv1.NetworkPolicy {
		t.Helper()
		r := renderChart(t, "-f", writeValues(t, "remoteWrite: [{url: \"http://prometheus:9090/api/v1/write\"}]\n"+values))
		ps := objectsOf[networkingv1.NetworkPolicy](t, r, "NetworkPolicy")
		require.Len(t, ps, 1)
		return ps["kube-state-push"]
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	port := func(name string) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: tcp, Port: ptr.To(intstr.FromString(name))}
	}
	prometheus := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}},
	}

	t.Run("no sources named: no ingress", func(t *testing.T) {
		p := policy(t, "networkPolicy: {enabled: true}")
		require.NotNil(t, p.Spec.Ingress, "an empty list, not an absent one")
		require.Empty(t, p.Spec.Ingress)
		require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, p.Spec.PolicyTypes)
		require.Equal(t, map[string]string{"app.kubernetes.io/name": "kube-state-push", "app.kubernetes.io/instance": "kube-state-push"}, p.Spec.PodSelector.MatchLabels)
	})
	t.Run("ingressFrom", func(t *testing.T) {
		p := policy(t, `
networkPolicy:
  enabled: true
  ingressFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
      podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
`)
		require.Equal(t, []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{prometheus}, Ports: []networkingv1.NetworkPolicyPort{port("http-metrics")},
		}}, p.Spec.Ingress)
		withPull := policy(t, "pull: {enabled: true}\nnetworkPolicy: {enabled: true, ingressFrom: [{ipBlock: {cidr: 10.0.0.0/8}}]}")
		require.Len(t, withPull.Spec.Ingress, 1)
		require.Equal(t, []networkingv1.NetworkPolicyPort{port("http-metrics"), port("http-state")}, withPull.Spec.Ingress[0].Ports)
		require.Equal(t, "10.0.0.0/8", withPull.Spec.Ingress[0].From[0].IPBlock.CIDR)
	})
	t.Run("rules given whole and egress", func(t *testing.T) {
		p := policy(t, `
networkPolicy:
  enabled: true
  ingress: [{from: [{podSelector: {matchLabels: {app: scraper}}}]}]
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}}]}]
`)
		require.Equal(t, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "scraper"}},
		}}}}, p.Spec.Ingress)
		require.Len(t, p.Spec.Egress, 1)
		require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, p.Spec.PolicyTypes)
	})
}

// webConfig mounts the user's Secret and passes --web.config.file, and
// with tls the probes speak HTTPS; without it nothing changes.
func TestChartWebConfig(t *testing.T) {
	rw := "remoteWrite[0].url=http://prometheus:9090/api/v1/write"
	c := renderChart(t, "--set", rw, "--set", "webConfig.existingSecret=agent-web", "--set", "webConfig.tls=true").workload(t).pod()
	ctr := c.Containers[0]
	require.Contains(t, ctr.Args, "--web.config.file=/etc/kube-state-push-web/web-config.yml")
	require.Equal(t, "agent-web", secretVolumeOf(t, c, ctr, "/etc/kube-state-push-web/web-config.yml"))
	require.Equal(t, corev1.URISchemeHTTPS, ctr.LivenessProbe.HTTPGet.Scheme)
	require.Equal(t, corev1.URISchemeHTTPS, ctr.ReadinessProbe.HTTPGet.Scheme)

	plain := renderChart(t, "--set", rw).workload(t).pod().Containers[0]
	for _, a := range plain.Args {
		require.NotContains(t, a, "--web.config.file")
	}
	require.Empty(t, plain.LivenessProbe.HTTPGet.Scheme)
}
