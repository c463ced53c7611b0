package watch

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
)

// deploymentResource describes deployments: kube-state-metrics'
// internal/store/deployment.go.
func deploymentResource() *Resource {
	return newResource("deployments", true, &appsv1.Deployment{},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return c.Kube.AppsV1().Deployments(ns).List(ctx, o)
		},
		func(ctx context.Context, c Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return c.Kube.AppsV1().Deployments(ns).Watch(ctx, o)
		},
		func(d *appsv1.Deployment, e *Emitter) {
			e.Identity("namespace", d.Namespace, "deployment", d.Name)
		},
		deploymentFamilies,
	)
}

// deploymentFamilies lists the deployment families, in kube-state-metrics'
// order.
func deploymentFamilies(o FamilyOptions) []Family[*appsv1.Deployment] {
	type D = *appsv1.Deployment
	return []Family[D]{
		{
			Name: "kube_deployment_owner", Help: "Information about the Deployment's owner.",
			Type: Gauge, Stability: Alpha, Generate: emitOwnersKindName[D],
		},
		{
			Name: "kube_deployment_created", Help: "Unix creation timestamp",
			Type: Gauge, Stability: Stable, Generate: emitCreated[D],
		},
		{
			Name: "kube_deployment_status_replicas", Help: "The number of replicas per deployment.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.Replicas }),
		},
		{
			Name: "kube_deployment_status_replicas_ready", Help: "The number of ready replicas per deployment.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.ReadyReplicas }),
		},
		{
			Name: "kube_deployment_status_replicas_available", Help: "The number of available replicas per deployment.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.AvailableReplicas }),
		},
		{
			Name: "kube_deployment_status_replicas_unavailable", Help: "The number of unavailable replicas per deployment.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.UnavailableReplicas }),
		},
		{
			Name: "kube_deployment_status_replicas_updated", Help: "The number of updated replicas per deployment.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int32 { return d.Status.UpdatedReplicas }),
		},
		{
			Name: "kube_deployment_status_terminating_replicas", Help: "The number of terminating replicas per deployment.",
			Type: Gauge, Stability: Alpha, Generate: optionalCountGauge(func(d D) *int32 { return d.Status.TerminatingReplicas }),
		},
		{
			Name: "kube_deployment_status_observed_generation", Help: "The generation observed by the deployment controller.",
			Type: Gauge, Stability: Stable, Generate: countGauge(func(d D) int64 { return d.Status.ObservedGeneration }),
		},
		{
			Name: "kube_deployment_status_condition", Help: "The current status conditions of a deployment.",
			Type: Gauge, Stability: Stable, Generate: deploymentConditions,
		},
		{
			Name: "kube_deployment_spec_replicas", Help: "Number of desired pods for a deployment.",
			Type: Gauge, Stability: Stable, Generate: optionalCountGauge(func(d D) *int32 { return d.Spec.Replicas }),
		},
		{
			Name: "kube_deployment_spec_paused", Help: "Whether the deployment is paused and will not be processed by the deployment controller.",
			Type: Gauge, Stability: Stable,
			Generate: func(d D, e *Emitter) { e.Emit(boolFloat64(d.Spec.Paused)) },
		},
		{
			Name: "kube_deployment_spec_strategy_rollingupdate_max_unavailable", Help: "Maximum number of unavailable replicas during a rolling update of a deployment.",
			Type: Gauge, Stability: Stable,
			Generate: deploymentRollingUpdate(func(u *appsv1.RollingUpdateDeployment) *intstr.IntOrString { return u.MaxUnavailable }, false),
		},
		{
			Name: "kube_deployment_spec_strategy_rollingupdate_max_surge", Help: "Maximum number of replicas that can be scheduled above the desired number of replicas during a rolling update of a deployment.",
			Type: Gauge, Stability: Stable,
			Generate: deploymentRollingUpdate(func(u *appsv1.RollingUpdateDeployment) *intstr.IntOrString { return u.MaxSurge }, true),
		},
		{
			Name: "kube_deployment_metadata_generation", Help: "Sequence number representing a specific generation of the desired state.",
			Type: Gauge, Stability: Stable, Generate: emitObjectGeneration[D],
		},
		{
			Name: "kube_deployment_deletion_timestamp", Help: "Unix deletion timestamp",
			Type: Gauge, Stability: Alpha, Generate: emitDeletionTimestamp[D],
		},
		{
			Name: "kube_deployment_annotations", Help: "Kubernetes annotations converted to Prometheus labels.",
			Type: Gauge, Stability: Alpha,
			Generate: mapFamily("annotation", objectAnnotations[D], o.AnnotationsAllowlist),
		},
		{
			Name: "kube_deployment_labels", Help: "Kubernetes labels converted to Prometheus labels.",
			Type: Gauge, Stability: Stable,
			Generate: mapFamily("label", objectLabels[D], o.LabelsAllowlist),
		},
	}
}

// deploymentReasons are the condition reasons the deployment controller
// sets (kubernetes/pkg/controller/deployment/util); kube_deployment_status_condition
// reports any other reason as "unknown", to bound the label's values.
var deploymentReasons = map[string]bool{
	"":                           true,
	"ReplicaSetUpdated":          true,
	"ReplicaSetCreateError":      true,
	"NewReplicaSetCreated":       true,
	"FoundNewReplicaSet":         true,
	"NewReplicaSetAvailable":     true,
	"ProgressDeadlineExceeded":   true,
	"DeploymentPaused":           true,
	"DeploymentResumed":          true,
	"MinimumReplicasAvailable":   true,
	"MinimumReplicasUnavailable": true,
}

// deploymentUnknownReason replaces a condition reason the deployment
// controller does not set.
const deploymentUnknownReason = "unknown"

func deploymentConditions(d *appsv1.Deployment, e *Emitter) {
	for _, c := range d.Status.Conditions {
		reason := c.Reason
		if !deploymentReasons[reason] {
			reason = deploymentUnknownReason
		}
		emitConditionStatus(e, c.Status, "reason", reason, "condition", string(c.Type))
	}
}

// deploymentRollingUpdate renders a rolling update bound (max unavailable or
// max surge) scaled against the desired replicas, rounding percentages up or
// down as the deployment controller does. Nothing is rendered without a
// rolling update strategy, desired replicas, or a valid bound.
func deploymentRollingUpdate(bound func(*appsv1.RollingUpdateDeployment) *intstr.IntOrString, roundUp bool) func(*appsv1.Deployment, *Emitter) {
	return func(d *appsv1.Deployment, e *Emitter) {
		u := d.Spec.Strategy.RollingUpdate
		if u == nil || d.Spec.Replicas == nil {
			return
		}
		v, err := intstr.GetScaledValueFromIntOrPercent(bound(u), int(*d.Spec.Replicas), roundUp)
		if err != nil {
			return
		}
		e.Emit(float64(v))
	}
}

// emitOwnersKindName renders an owner family without owner_is_controller:
// one series per owner reference, or one with no owner labels for an object
// without owners (kube_deployment_owner; see emitOwners for the others).
func emitOwnersKindName[T metav1.Object](o T, e *Emitter) {
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		e.Emit(1, "owner_kind", "", "owner_name", "")
		return
	}
	for _, r := range refs {
		e.Emit(1, "owner_kind", r.Kind, "owner_name", r.Name)
	}
}

// Generators shared by the workload resources (deployments, replica sets,
// stateful sets, daemon sets, replication controllers), whose families are
// mostly counts read from spec and status.
