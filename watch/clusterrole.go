package watch

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterRoleResource describes cluster roles: kube-state-metrics'
// internal/store/clusterrole.go. Every family reads only metadata, so
// cluster roles are watched as metav1.PartialObjectMetadata: their rules
// never reach the agent.
func clusterRoleResource() *Resource {
	return metadataResource("clusterroles", rbacv1.SchemeGroupVersion.WithResource("clusterroles"), false,
		func(o *metav1.PartialObjectMetadata, e *Emitter) {
			e.Identity("clusterrole", o.Name)
		},
		func(o FamilyOptions) []Family[*metav1.PartialObjectMetadata] {
			return rbacFamilies("clusterrole", "cluster role", emitRoleInfo, o)
		},
	)
}
