package watch

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// replicationControllerResource describes replication controllers:
// kube-state-metrics' internal/store/replicationcontroller.go. Unlike the
// other workloads they have no _labels or _annotations families.
func replicationControllerResource() *Resource {
	return newResource("replicationcontrollers", true, &v1.ReplicationController{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.CoreV1().ReplicationControllers(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.CoreV1().ReplicationControllers(ns).Watch(ctx, o)
		},
		func(r *v1.ReplicationController, e *Emitter) {
			e.Identity("namespace", r.Namespace, "replicationcontroller", r.Name)
		},
		replicationControllerFamilies,
	)
}

// replicationControllerFamilies lists the replication controller families,
// in kube-state-metrics' order.
func replicationControllerFamilies(FamilyOptions) []Family[*v1.ReplicationController] {
	type R = *v1.ReplicationController
	return []Family[R]{
		{
			Name: "kube_replicationcontroller_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[R],
		},
		{
			Name: "kube_replicationcontroller_status_replicas", Help: "The number of replicas per ReplicationController.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.Replicas }),
		},
		{
			Name: "kube_replicationcontroller_status_fully_labeled_replicas", Help: "The number of fully labeled replicas per ReplicationController.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.FullyLabeledReplicas }),
		},
		{
			Name: "kube_replicationcontroller_status_ready_replicas", Help: "The number of ready replicas per ReplicationController.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.ReadyReplicas }),
		},
		{
			Name: "kube_replicationcontroller_status_available_replicas", Help: "The number of available replicas per ReplicationController.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int32 { return r.Status.AvailableReplicas }),
		},
		{
			Name: "kube_replicationcontroller_status_observed_generation", Help: "The generation observed by the ReplicationController controller.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(r R) int64 { return r.Status.ObservedGeneration }),
		},
		{
			Name: "kube_replicationcontroller_spec_replicas", Help: "Number of desired pods for a ReplicationController.",
			Type: Gauge, Stability: Stable, Generate: optionalCountGauge(func(r R) *int32 { return r.Spec.Replicas }),
		},
		{
			Name: "kube_replicationcontroller_metadata_generation", Help: "Sequence number representing a specific generation of the desired state.",
			Type: Gauge, Stability: Stable, Generate: emitObjectGeneration[R],
		},
		{
			Name: "kube_replicationcontroller_owner", Help: "Information about the ReplicationController's owner.",
			Type: Gauge, Stability: Alpha, Generate: emitOwners[R],
		},
	}
}
