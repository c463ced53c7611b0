package watch

import "sort"

// All returns every resource the agent can watch, sorted by name: the 39
// resources of kube-state-metrics v2.20.
func All() []*Resource {
	var rs []*Resource
	for _, r := range []*Resource{
		csrResource(),
		clusterRoleBindingResource(),
		clusterRoleResource(),
		configMapResource(),
		cronJobResource(),
		daemonSetResource(),
		deploymentResource(),
		endpointsResource(),
		endpointSliceResource(),
		hpaResource(),
		ingressClassResource(),
		ingressResource(),
		jobResource(),
		leaseResource(),
		limitRangeResource(),
		mutatingAdmissionPolicyResource(),
		mutatingAdmissionPolicyBindingResource(),
		mutatingWebhookConfigurationResource(),
		namespaceResource(),
		networkPolicyResource(),
		nodeResource(),
		persistentVolumeClaimResource(),
		persistentVolumeResource(),
		podDisruptionBudgetResource(),
		podResource(),
		replicaSetResource(),
		replicationControllerResource(),
		resourceQuotaResource(),
		roleBindingResource(),
		roleResource(),
		secretResource(),
		serviceAccountResource(),
		serviceResource(),
		statefulSetResource(),
		storageClassResource(),
		validatingAdmissionPolicyResource(),
		validatingAdmissionPolicyBindingResource(),
		validatingWebhookConfigurationResource(),
		volumeAttachmentResource(),
	} {
		if r != nil {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// DefaultResources are watched when the configuration names none: the 32
// kube-state-metrics watches by default (pkg/options/resource.go). The
// others (serviceaccounts, endpoints, roles, rolebindings, clusterroles,
// clusterrolebindings, ingressclasses) are watched when listed.
var DefaultResources = []string{"certificatesigningrequests", "configmaps", "cronjobs", "daemonsets", "deployments", "endpointslices", "horizontalpodautoscalers", "ingresses", "jobs", "leases", "limitranges", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "mutatingwebhookconfigurations", "namespaces", "networkpolicies", "nodes", "persistentvolumeclaims", "persistentvolumes", "poddisruptionbudgets", "pods", "replicasets", "replicationcontrollers", "resourcequotas", "secrets", "services", "statefulsets", "storageclasses", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "validatingwebhookconfigurations", "volumeattachments"}

// Lookup returns the resource with the given name.
func Lookup(name string) (*Resource, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// Names returns the names of every resource the agent can watch.
func Names() []string {
	var ns []string
	for _, r := range All() {
		ns = append(ns, r.Name)
	}
	return ns
}
