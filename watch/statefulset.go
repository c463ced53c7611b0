package watch

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// statefulSetResource describes stateful sets: kube-state-metrics'
// internal/store/statefulset.go.
func statefulSetResource() *Resource {
	return newResource("statefulsets", true, &appsv1.StatefulSet{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.AppsV1().StatefulSets(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.AppsV1().StatefulSets(ns).Watch(ctx, o)
		},
		func(s *appsv1.StatefulSet, e *Emitter) {
			e.Identity("namespace", s.Namespace, "statefulset", s.Name)
		},
		statefulSetFamilies,
	)
}

// statefulSetFamilies lists the stateful set families, in
// kube-state-metrics' order. Unlike the other workloads, every one of them
// is stable, annotations and deletion timestamp included.
func statefulSetFamilies(o FamilyOptions) []Family[*appsv1.StatefulSet] {
	type S = *appsv1.StatefulSet
	return []Family[S]{
		{
			Name: "kube_statefulset_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[S],
		},
		{
			Name: "kube_statefulset_status_replicas", Help: "The number of replicas per StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int32 { return s.Status.Replicas }),
		},
		{
			Name: "kube_statefulset_status_replicas_available", Help: "The number of available replicas per StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int32 { return s.Status.AvailableReplicas }),
		},
		{
			Name: "kube_statefulset_status_replicas_current", Help: "The number of current replicas per StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int32 { return s.Status.CurrentReplicas }),
		},
		{
			Name: "kube_statefulset_status_replicas_ready", Help: "The number of ready replicas per StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int32 { return s.Status.ReadyReplicas }),
		},
		{
			Name: "kube_statefulset_status_replicas_updated", Help: "The number of updated replicas per StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int32 { return s.Status.UpdatedReplicas }),
		},
		{
			Name: "kube_statefulset_status_observed_generation", Help: "The generation observed by the StatefulSet controller.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(s S) int64 { return s.Status.ObservedGeneration }),
		},
		{
			Name: "kube_statefulset_replicas", Help: "Number of desired pods for a StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: optionalCountGauge(func(s S) *int32 { return s.Spec.Replicas }),
		},
		{
			Name: "kube_statefulset_ordinals_start", Help: "Start ordinal of the StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: statefulSetOrdinalsStart,
		},
		{
			Name: "kube_statefulset_metadata_generation", Help: "Sequence number representing a specific generation of the desired state for the StatefulSet.",
			Type: Gauge, Stability: Stable, Generate: emitObjectGeneration[S],
		},
		{
			Name: "kube_statefulset_persistentvolumeclaim_retention_policy", Help: "Count of retention policy for StatefulSet template PVCs",
			Type: Gauge, Stability: Stable, Generate: statefulSetRetentionPolicy,
		},
		{
			Name: "kube_statefulset_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("annotation", objectAnnotations[S], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_statefulset_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[S], o.LabelsAllowlist),
		},
		{
			Name: "kube_statefulset_status_current_revision", Help: "Indicates the version of the StatefulSet used to generate Pods in the sequence [0,currentReplicas).",
			Type: Gauge, Stability: Stable,
			Generate: func(s S, e *Emitter) { e.Emit(1, "revision", s.Status.CurrentRevision) },
		},
		{
			Name: "kube_statefulset_status_update_revision", Help: "Indicates the version of the StatefulSet used to generate Pods in the sequence [replicas-updatedReplicas,replicas)",
			Type: Gauge, Stability: Stable,
			Generate: func(s S, e *Emitter) { e.Emit(1, "revision", s.Status.UpdateRevision) },
		},
		{
			Name: "kube_statefulset_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Stable, Generate: emitDeletionTimestamp[S],
		},
	}
}

func statefulSetOrdinalsStart(s *appsv1.StatefulSet, e *Emitter) {
	if o := s.Spec.Ordinals; o != nil {
		e.Emit(float64(o.Start))
	}
}

// statefulSetRetentionPolicy renders the PVC retention policy when either
// of its rules is set; the API server defaults both to Retain.
func statefulSetRetentionPolicy(s *appsv1.StatefulSet, e *Emitter) {
	p := s.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || (p.WhenDeleted == "" && p.WhenScaled == "") {
		return
	}
	e.Emit(1, "when_deleted", string(p.WhenDeleted), "when_scaled", string(p.WhenScaled))
}
