package watch

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNetworkPolicyKSMCases ports kube-state-metrics' TestNetworkPolicyStore.
func TestNetworkPolicyKSMCases(t *testing.T) {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "netpol1", Namespace: "ns1", UID: "uid",
			CreationTimestamp: metav1.Unix(1501569018, 0),
			Labels:            map[string]string{"app": "db"},
			Annotations:       map[string]string{"owner": "sre"},
		},
		Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}, {}},
			Egress:  []networkingv1.NetworkPolicyEgressRule{{}, {}, {}},
		},
	}
	runNetworkCases(t, networkPolicyResource, []networkCase[*networkingv1.NetworkPolicy]{
		{
			name: "rules", obj: np,
			families: []string{"kube_networkpolicy_created", "kube_networkpolicy_labels", "kube_networkpolicy_spec_egress_rules", "kube_networkpolicy_spec_ingress_rules"},
			want: `
kube_networkpolicy_created{namespace="ns1",networkpolicy="netpol1"} 1.501569018e+09
kube_networkpolicy_spec_egress_rules{namespace="ns1",networkpolicy="netpol1"} 3
kube_networkpolicy_spec_ingress_rules{namespace="ns1",networkpolicy="netpol1"} 2
`,
		},
		{
			name: "allowlists", obj: np, opts: networkAllowAll,
			families: []string{"kube_networkpolicy_annotations", "kube_networkpolicy_labels"},
			want: `
kube_networkpolicy_annotations{annotation_owner="sre",namespace="ns1",networkpolicy="netpol1"} 1
kube_networkpolicy_labels{label_app="db",namespace="ns1",networkpolicy="netpol1"} 1
`,
		},
	})
}

// TestNetworkPolicyMalformed renders every family of an empty policy: the
// creation time is rendered even unset, as the zero time.
func TestNetworkPolicyMalformed(t *testing.T) {
	runNetworkCases(t, networkPolicyResource, []networkCase[*networkingv1.NetworkPolicy]{{
		name: "empty", opts: networkAllowAll, families: networkAllFamilies(networkPolicyResource()),
		obj: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{UID: "u"}},
		want: `
kube_networkpolicy_annotations{} 1
kube_networkpolicy_created{} -6.21355968e+10
kube_networkpolicy_labels{} 1
kube_networkpolicy_spec_egress_rules{} 0
kube_networkpolicy_spec_ingress_rules{} 0
`,
	}})
}
