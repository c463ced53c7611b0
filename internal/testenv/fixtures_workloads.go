package testenv

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// workloadFinalizer keeps the "-deleting" workload fixtures terminating
// (with a deletion timestamp) for as long as it is set: no controller
// removes it.
const workloadFinalizer = "fixtures.kube-state-push.invalid/hold"

// workloadTime is the fixed time of the workload fixtures' status
// conditions.
var workloadTime = metav1.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))

// FixturesWorkloads creates, in namespace ns, deployments, replica sets,
// stateful sets, daemon sets and replication controllers in the states that
// exercise every family of those resources, and writes their status as
// their controllers would:
//
//   - deployments: "web" (rolling update by percentage and count, available,
//     with terminating replicas), "paused" (recreate strategy, failing
//     conditions, one with a reason the controller never sets), "owned" (an
//     owner reference, nothing running yet) and "web-deleting";
//   - replica sets: "web-7d4b9" (controlled by deployment web) and "orphan"
//     (no owner, scaled to zero);
//   - stateful sets: "db" (start ordinal, PVC retention policy, volume claim
//     templates, rolling out a new revision), "cache" (defaults) and
//     "db-deleting";
//   - daemon sets: "agent" (some nodes unavailable and misscheduled) and
//     "agent-deleting";
//   - replication controllers: "legacy" (an owner reference without a
//     controller flag) and "empty" (zero replicas).
//
// The "-deleting" objects carry a finalizer and are deleted, so they stay
// terminating: their deletion timestamp is the only time that depends on
// when the fixtures ran. Everything else is fixed.
func FixturesWorkloads(ctx context.Context, c kubernetes.Interface, ns string) error {
	web, err := createWorkloadDeployments(ctx, c, ns)
	if err != nil {
		return err
	}
	if err := createWorkloadReplicaSets(ctx, c, ns, web); err != nil {
		return err
	}
	if err := createWorkloadStatefulSets(ctx, c, ns); err != nil {
		return err
	}
	if err := createWorkloadDaemonSets(ctx, c, ns); err != nil {
		return err
	}
	return createWorkloadReplicationControllers(ctx, c, ns)
}

// createWorkloadDeployments creates the deployments and returns "web".
func createWorkloadDeployments(ctx context.Context, c kubernetes.Interface, ns string) (*appsv1.Deployment, error) {
	client := c.AppsV1().Deployments(ns)
	webStatus := appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 1,
		TerminatingReplicas: new(int32(1)),
		Conditions: []appsv1.DeploymentCondition{
			workloadDeploymentCondition(appsv1.DeploymentAvailable, v1.ConditionTrue, "MinimumReplicasAvailable"),
			workloadDeploymentCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, "NewReplicaSetAvailable"),
		},
	}
	rolling := appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: new(intstr.FromString("50%")),
			MaxSurge:       new(intstr.FromInt32(2)),
		},
	}
	web := workloadDeployment(ns, "web", 3, rolling, webStatus)
	web.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2", "team.example.com/owner": "frontend"}

	paused := workloadDeployment(ns, "paused", 2, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			workloadDeploymentCondition(appsv1.DeploymentAvailable, v1.ConditionFalse, "MinimumReplicasUnavailable"),
			workloadDeploymentCondition(appsv1.DeploymentProgressing, v1.ConditionUnknown, "DeploymentPaused"),
			workloadDeploymentCondition(appsv1.DeploymentReplicaFailure, v1.ConditionTrue, "FailedCreate"),
		},
	})
	paused.Spec.Paused = true

	owned := workloadDeployment(ns, "owned", 1, rolling, appsv1.DeploymentStatus{ObservedGeneration: 1})
	owned.OwnerReferences = []metav1.OwnerReference{workloadOwner("example.com/v1", "Application", "shop", "6f1f4a52-2b7e-4c38-9d1a-000000000001", new(true))}

	deleting := workloadDeployment(ns, "web-deleting", 1, rolling, webStatus)
	deleting.Finalizers = []string{workloadFinalizer}

	created, err := createWorkload(ctx, client, web, false)
	if err != nil {
		return nil, err
	}
	for _, d := range []*appsv1.Deployment{paused, owned} {
		if _, err := createWorkload(ctx, client, d, false); err != nil {
			return nil, err
		}
	}
	if _, err := createWorkload(ctx, client, deleting, true); err != nil {
		return nil, err
	}
	return created, nil
}

func workloadDeployment(ns, name string, replicas int32, strategy appsv1.DeploymentStrategy, status appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: workloadObjectMeta(ns, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Strategy: strategy,
			Selector: workloadSelector(name), Template: workloadPodTemplate(name),
		},
		Status: status,
	}
}

func workloadDeploymentCondition(t appsv1.DeploymentConditionType, s v1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type: t, Status: s, Reason: reason, Message: "set by fixtures",
		LastUpdateTime: workloadTime, LastTransitionTime: workloadTime,
	}
}

func createWorkloadReplicaSets(ctx context.Context, c kubernetes.Interface, ns string, web *appsv1.Deployment) error {
	client := c.AppsV1().ReplicaSets(ns)
	owned := workloadReplicaSet(ns, "web-7d4b9", 3, appsv1.ReplicaSetStatus{
		Replicas: 4, FullyLabeledReplicas: 4, ReadyReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1,
		TerminatingReplicas: new(int32(1)),
	})
	owned.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "Deployment", Name: web.Name, UID: web.UID, Controller: new(true), BlockOwnerDeletion: new(true),
	}}
	owned.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
	orphan := workloadReplicaSet(ns, "orphan", 0, appsv1.ReplicaSetStatus{ObservedGeneration: 2})
	for _, r := range []*appsv1.ReplicaSet{owned, orphan} {
		if _, err := createWorkload(ctx, client, r, false); err != nil {
			return err
		}
	}
	return nil
}

func workloadReplicaSet(ns, name string, replicas int32, status appsv1.ReplicaSetStatus) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: workloadObjectMeta(ns, name),
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: workloadSelector(name), Template: workloadPodTemplate(name)},
		Status:     status,
	}
}

func createWorkloadStatefulSets(ctx context.Context, c kubernetes.Interface, ns string) error {
	client := c.AppsV1().StatefulSets(ns)
	rolling := appsv1.StatefulSetStatus{
		ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 1,
		CurrentRevision: "db-5b8f6c7d9", UpdateRevision: "db-6c9a7d8e1",
	}
	db := workloadStatefulSet(ns, "db", new(int32(3)), rolling)
	db.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 1}
	db.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	db.Spec.VolumeClaimTemplates = []v1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	db.Annotations = map[string]string{"team.example.com/owner": "storage"}

	cache := workloadStatefulSet(ns, "cache", nil, appsv1.StatefulSetStatus{
		ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1,
		CurrentRevision: "cache-7f6d5c4b3", UpdateRevision: "cache-7f6d5c4b3",
	})

	deleting := workloadStatefulSet(ns, "db-deleting", new(int32(1)), appsv1.StatefulSetStatus{ObservedGeneration: 1})
	deleting.Finalizers = []string{workloadFinalizer}

	for _, s := range []*appsv1.StatefulSet{db, cache} {
		if _, err := createWorkload(ctx, client, s, false); err != nil {
			return err
		}
	}
	_, err := createWorkload(ctx, client, deleting, true)
	return err
}

// workloadStatefulSet is a stateful set; nil replicas leaves the API
// server's default.
func workloadStatefulSet(ns, name string, replicas *int32, status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: workloadObjectMeta(ns, name),
		Spec: appsv1.StatefulSetSpec{
			Replicas: replicas, ServiceName: name,
			Selector: workloadSelector(name), Template: workloadPodTemplate(name),
		},
		Status: status,
	}
}

func createWorkloadDaemonSets(ctx context.Context, c kubernetes.Interface, ns string) error {
	client := c.AppsV1().DaemonSets(ns)
	status := appsv1.DaemonSetStatus{
		ObservedGeneration: 1, DesiredNumberScheduled: 5, CurrentNumberScheduled: 4, NumberMisscheduled: 1,
		NumberReady: 3, NumberAvailable: 3, NumberUnavailable: 2, UpdatedNumberScheduled: 2,
	}
	agent := workloadDaemonSet(ns, "agent", status)
	agent.Annotations = map[string]string{"team.example.com/owner": "platform"}
	deleting := workloadDaemonSet(ns, "agent-deleting", status)
	deleting.Finalizers = []string{workloadFinalizer}
	if _, err := createWorkload(ctx, client, agent, false); err != nil {
		return err
	}
	_, err := createWorkload(ctx, client, deleting, true)
	return err
}

func workloadDaemonSet(ns, name string, status appsv1.DaemonSetStatus) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: workloadObjectMeta(ns, name),
		Spec:       appsv1.DaemonSetSpec{Selector: workloadSelector(name), Template: workloadPodTemplate(name)},
		Status:     status,
	}
}

func createWorkloadReplicationControllers(ctx context.Context, c kubernetes.Interface, ns string) error {
	client := c.CoreV1().ReplicationControllers(ns)
	legacy := workloadReplicationController(ns, "legacy", 2, v1.ReplicationControllerStatus{
		Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1,
	})
	legacy.OwnerReferences = []metav1.OwnerReference{workloadOwner("apps.openshift.io/v1", "DeploymentConfig", "legacy", "6f1f4a52-2b7e-4c38-9d1a-000000000002", nil)}
	empty := workloadReplicationController(ns, "empty", 0, v1.ReplicationControllerStatus{ObservedGeneration: 1})
	for _, r := range []*v1.ReplicationController{legacy, empty} {
		if _, err := createWorkload(ctx, client, r, false); err != nil {
			return err
		}
	}
	return nil
}

func workloadReplicationController(ns, name string, replicas int32, status v1.ReplicationControllerStatus) *v1.ReplicationController {
	tmpl := workloadPodTemplate(name)
	return &v1.ReplicationController{
		ObjectMeta: workloadObjectMeta(ns, name),
		Spec:       v1.ReplicationControllerSpec{Replicas: &replicas, Selector: workloadLabels(name), Template: &tmpl},
		Status:     status,
	}
}

// workloadClient is what createWorkload needs of a typed client.
type workloadClient[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// createWorkload creates obj, then writes the status it holds (which
// create ignores), and deletes it when deleting is set. It returns the
// object as created.
func createWorkload[T metav1.Object](ctx context.Context, c workloadClient[T], obj T, deleting bool) (T, error) {
	kind := fmt.Sprintf("%T", obj)
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return created, fmt.Errorf("creating %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	obj.SetUID(created.GetUID())
	obj.SetResourceVersion(created.GetResourceVersion())
	if _, err := c.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return created, fmt.Errorf("writing status of %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if deleting {
		if err := c.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
			return created, fmt.Errorf("deleting %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return created, nil
}

// workloadObjectMeta names a workload and labels it as its pods are.
func workloadObjectMeta(ns, name string) metav1.ObjectMeta {
	l := workloadLabels(name)
	l["app.kubernetes.io/part-of"] = "fixtures"
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}
}

func workloadLabels(name string) map[string]string {
	return map[string]string{"app": name}
}

func workloadSelector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: workloadLabels(name)}
}

// workloadPodTemplate is a one-container pod template labelled for the
// workload's selector.
func workloadPodTemplate(name string) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: workloadLabels(name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// workloadOwner is an owner reference to an object that does not exist
// (no garbage collector runs).
func workloadOwner(apiVersion, kind, name, uid string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: controller}
}
