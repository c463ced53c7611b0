package watch

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// replicaSetResource describes replica sets: kube-state-metrics'
// internal/store/replicaset.go.
func replicaSetResource() *Resource {
	return newResource("replicasets", true, &appsv1.ReplicaSet{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.AppsV1().ReplicaSets(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		},
		func(r *appsv1.ReplicaSet, e *Emitter) {
			e.Identity("namespace", r.Namespace, "replicaset", r.Name)
		},
		replicaSetFamilies,
	)
}

// replicaSetFamilies lists the replica set families, in kube-state-metrics'
// order.
func replicaSetFamilies(o FamilyOptions) []Family[*appsv1.ReplicaSet] {
	type R = *appsv1.ReplicaSet
	return []Family[R]{
		{
			Name: "kube_replicaset_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[R],
		},
		{
			Name: "kube_replicaset_status_replicas", Help: "The number of replicas per ReplicaSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.Replicas }),
		},
		{
			Name: "kube_replicaset_status_fully_labeled_replicas", Help: "The number of fully labeled replicas per ReplicaSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.FullyLabeledReplicas }),
		},
		{
			Name: "kube_replicaset_status_ready_replicas", Help: "The number of ready replicas per ReplicaSet.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.ReadyReplicas }),
		},
		{
			Name: "kube_replicaset_status_terminating_replicas", Help: "The number of terminating replicas per ReplicaSet.",
			Type: Gauge, Stability: Alpha, Generate: optionalCountGauge(func(r R) *int32 { return r.Status.TerminatingReplicas }),
		},
		{
			Name: "kube_replicaset_status_observed_generation", Help: "The generation observed by the ReplicaSet controller.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int64 { return r.Status.ObservedGeneration }),
		},
		{
			Name: "kube_replicaset_spec_replicas", Help: "Number of desired pods for a ReplicaSet.",
			Type: Gauge, Stability: Stable, Generate: optionalCountGauge(func(r R) *int32 { return r.Spec.Replicas }),
		},
		{
			Name: "kube_replicaset_metadata_generation", Help: "Sequence number representing a specific generation of the desired state.",
			Type: Gauge, Stability: Stable, Generate: emitObjectGeneration[R],
		},
		{
			Name: "kube_replicaset_owner", Help: "Information about the ReplicaSet's owner.",
			Type: Gauge, Stability: Stable, Generate: emitOwners[R],
		},
		{
			Name: "kube_replicaset_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[R], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_replicaset_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[R], o.LabelsAllowlist),
		},
	}
}
