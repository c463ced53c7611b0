package testenv

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// fixtureFinalizer keeps an object terminating: nothing removes it.
const fixtureFinalizer = "fixtures.kube-state-push.invalid/hold"

// FixturesPods creates, in namespace ns, the config maps and the pods and
// nodes that CreateSampleCluster does not cover: init containers and a
// sidecar, a runtime class with overhead, volumes from claims (persistent
// and ephemeral), resource claims, an evicted pod with a disruption
// condition, and a terminating pod and node (held by a finalizer, so their
// deletion timestamps exist). Cluster-scoped names start with ns.
func FixturesPods(ctx context.Context, c kubernetes.Interface, ns string) error {
	for _, cm := range []*v1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns,
			Labels: map[string]string{"app": "web", "team.example.com/owner": "sre"}, Annotations: map[string]string{"note": "fixture"}},
			Data: map[string]string{"key": "value"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns}},
	} {
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating config map %s: %w", cm.Name, err)
		}
	}

	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-sandboxed"},
		Handler:    "runsc",
		Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("120Mi"),
		}},
	}
	if _, err := c.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating runtime class: %w", err)
	}

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-high"}, Value: 1000}
	if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating priority class: %w", err)
	}

	t := metav1.Date(2026, 1, 2, 3, 4, 5, 0, metav1.Now().Location())
	always := v1.ContainerRestartPolicyAlways
	claimName := "data-claim"
	template := "gpu-template"
	pod := samplePod(ns, "with-init", "")
	pod.Spec.RuntimeClassName = &rc.Name
	pod.Spec.PriorityClassName = pc.Name
	controller := true
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c5d", UID: "0b0e5b0e-0000-4000-8000-000000000001", Controller: &controller,
	}}
	pod.Spec.InitContainers = []v1.Container{
		{Name: "seed", Image: "busybox:1.36"},
		{Name: "migrate", Image: "busybox:1.36", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}},
		{Name: "proxy", Image: "envoy:1.30", RestartPolicy: &always},
	}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-pvc", ReadOnly: true}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}}},
	}
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{
		{Name: "shared", ResourceClaimName: &claimName},
		{Name: "gpu", ResourceClaimTemplateName: &template},
	}
	var created *v1.Pod
	err := createAdmitted(func() (err error) {
		created, err = c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating pod with-init: %w", err)
	}
	generated := "with-init-gpu-x7k2p"
	created.Status = v1.PodStatus{
		Phase: v1.PodPending,
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t},
			{Type: v1.PodInitialized, Status: v1.ConditionFalse, LastTransitionTime: t},
		},
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "seed", Image: "busybox:1.36", ContainerID: "containerd://i0",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0, StartedAt: t, FinishedAt: t}}},
			{Name: "migrate", Image: "busybox:1.36", ContainerID: "containerd://i1", RestartCount: 3,
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 2, FinishedAt: t}}},
			{Name: "proxy", Image: "envoy:1.30", ContainerID: "containerd://i2", Ready: true, Started: boolPtr(true),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: t}}},
		},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", Image: "nginx:1.27", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}},
			{Name: "sidecar", Image: "busybox:1.36", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}},
		},
		ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &generated}},
		QOSClass:              v1.PodQOSBurstable,
	}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of pod with-init: %w", err)
	}

	evicted := samplePod(ns, "evicted", "")
	if created, err = c.CoreV1().Pods(ns).Create(ctx, evicted, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod evicted: %w", err)
	}
	created.Status = v1.PodStatus{
		Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
		Conditions: []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: t},
		},
	}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of pod evicted: %w", err)
	}

	terminating := samplePod(ns, "terminating", "")
	terminating.Finalizers = []string{fixtureFinalizer}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, terminating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod terminating: %w", err)
	}
	if err := c.CoreV1().Pods(ns).Delete(ctx, "terminating", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting pod terminating: %w", err)
	}

	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node-leaving", Finalizers: []string{fixtureFinalizer}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	if err := c.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting node %s: %w", node.Name, err)
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

// createAdmitted runs create again while the API server's admission
// plugins refuse it as Forbidden, for about 10 s (admissionBackoff): the
// Priority and RuntimeClass plugins look classes up in informer caches,
// which may not hold a class created a moment before ("no PriorityClass
// with name ... was found") although it exists. Any other outcome ends it.
func createAdmitted(create func() error) error {
	return retry.OnError(admissionBackoff, apierrors.IsForbidden, create)
}

// admissionBackoff is 100 tries 100 ms apart.
var admissionBackoff = wait.Backoff{Steps: 100, Duration: 100 * time.Millisecond}
