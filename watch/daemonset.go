package watch

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// daemonSetResource describes daemon sets: kube-state-metrics'
// internal/store/daemonset.go.
func daemonSetResource() *Resource {
	return newResource("daemonsets", true, &appsv1.DaemonSet{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.AppsV1().DaemonSets(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.AppsV1().DaemonSets(ns).Watch(ctx, o)
		},
		func(d *appsv1.DaemonSet, e *Emitter) {
			e.Identity("namespace", d.Namespace, "daemonset", d.Name)
		},
		daemonSetFamilies,
	)
}

// daemonSetFamilies lists the daemon set families, in kube-state-metrics'
// order, then the v1 families the options name. Some help texts lack a final
// period, as in kube-state-metrics.
func daemonSetFamilies(o FamilyOptions) []Family[*appsv1.DaemonSet] {
	type D = *appsv1.DaemonSet
	return append([]Family[D]{
		{
			Name: "kube_daemonset_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[D],
		},
		{
			Name: "kube_daemonset_status_current_number_scheduled", Help: "The number of nodes running at least one daemon pod and are supposed to.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.CurrentNumberScheduled }),
		},
		{
			Name: "kube_daemonset_status_desired_number_scheduled", Help: "The number of nodes that should be running the daemon pod.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.DesiredNumberScheduled }),
		},
		{
			Name: "kube_daemonset_status_number_available", Help: "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.NumberAvailable }),
		},
		{
			Name: "kube_daemonset_status_number_misscheduled", Help: "The number of nodes running a daemon pod but are not supposed to.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.NumberMisscheduled }),
		},
		{
			Name: "kube_daemonset_status_number_ready", Help: "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.NumberReady }),
		},
		{
			Name: "kube_daemonset_status_number_unavailable", Help: "The number of nodes that should be running the daemon pod and have none of the daemon pod running and available",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.NumberUnavailable }),
		},
		{
			Name: "kube_daemonset_status_observed_generation", Help: "The most recent generation observed by the daemon set controller.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int64 { return d.Status.ObservedGeneration }),
		},
		{
			Name: "kube_daemonset_status_updated_number_scheduled", Help: "The total number of nodes that are running updated daemon pod",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.UpdatedNumberScheduled }),
		},
		{
			Name: "kube_daemonset_metadata_generation", Help: "Sequence number representing a specific generation of the desired state.",
			Type: Gauge, Stability: Stable, Generate: emitObjectGeneration[D],
		},
		{
			Name: "kube_daemonset_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[D],
		},
		{
			Name: "kube_daemonset_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[D], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_daemonset_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[D], o.LabelsAllowlist),
		},
	}, legacyV1(o, daemonSetLegacyV1Families)...)
}
