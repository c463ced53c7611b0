package watch

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// roleResource describes roles: kube-state-metrics' internal/store/role.go.
// Every family reads only metadata, so roles are watched as
// metav1.PartialObjectMetadata: their rules never reach the agent.
func roleResource() *Resource {
	return metadataResource("roles", rbacv1.SchemeGroupVersion.WithResource("roles"), true,
		func(o *metav1.PartialObjectMetadata, e *Emitter) {
			e.Identity("namespace", o.Namespace, "role", o.Name)
		},
		func(o FamilyOptions) []Family[*metav1.PartialObjectMetadata] {
			return rbacFamilies("role", "role", emitRoleInfo, o)
		},
	)
}

// emitRoleInfo renders the label-less _info series of roles and cluster
// roles.
func emitRoleInfo(_ *metav1.PartialObjectMetadata, e *Emitter) { e.Emit(1) }

// rbacFamilies lists the families kube-state-metrics declares alike, all
// alpha, for roles, cluster roles and their bindings: kind is the resource
// in family names (e.g. clusterrolebinding), what names it in HELP texts
// ("cluster role"), and info renders kube_<kind>_info.
func rbacFamilies[T metav1.Object](kind, what string, info func(T, *Emitter), o FamilyOptions) []Family[T] {
	prefix := "kube_" + kind + "_"
	return []Family[T]{
		{
			Name: prefix + "annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[T], o.AnnotationsAllowlist),
		},
		{
			Name: prefix + "labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("label", objectLabels[T], o.LabelsAllowlist),
		},
		{
			Name: prefix + "info", Help: "Information about " + what + ".",
			Type: Gauge, Stability: Alpha, Generate: info,
		},
		{
			Name: prefix + "created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitCreated[T],
		},
		{
			Name: prefix + "metadata_resource_version", Help: "Resource version representing a specific version of the " + what + ".",
			Type: Gauge, Stability: Alpha, Generate: emitResourceVersion[T],
		},
	}
}
