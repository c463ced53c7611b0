package testenv

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SampleCluster names the objects CreateSampleCluster made.
type SampleCluster struct {
	// Namespace holds the pods.
	Namespace string
	// Nodes are the node names, in order.
	Nodes []string
	// Pods maps a pod's role (running, notready, pending, crashloop,
	// oomkilled, completed) to its name.
	Pods map[string]string
}

// CreateSampleCluster creates a namespace, two nodes and pods in the states
// a dashboard shows (running ready and not ready, pending unschedulable,
// CrashLoopBackOff with restarts, OOMKilled, completed), and writes their
// status as a kubelet would. Node names start with prefix, so that several
// tests can share one API server.
func CreateSampleCluster(ctx context.Context, c kubernetes.Interface, namespace, prefix string) (*SampleCluster, error) {
	s := &SampleCluster{Namespace: namespace, Pods: map[string]string{}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	for i, n := range []string{"a", "b"} {
		name := prefix + "-node-" + n
		if err := createNode(ctx, c, name, i == 1); err != nil {
			return nil, err
		}
		s.Nodes = append(s.Nodes, name)
	}
	now := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	running := func() v1.ContainerState {
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}
	}
	pods := []struct {
		role, node string
		phase      v1.PodPhase
		conds      []v1.PodCondition
		statuses   []v1.ContainerStatus
	}{
		{role: "running", node: s.Nodes[0], phase: v1.PodRunning,
			conds: readyConds(now, true),
			statuses: []v1.ContainerStatus{
				{Name: "app", Ready: true, State: running(), Image: "nginx:1.27", ImageID: "docker-pullable://nginx@sha256:1", ContainerID: "containerd://a1"},
				{Name: "sidecar", Ready: true, State: running(), Image: "busybox:1.36", ImageID: "docker-pullable://busybox@sha256:2", ContainerID: "containerd://a2"},
			}},
		{role: "notready", node: s.Nodes[0], phase: v1.PodRunning,
			conds: readyConds(now, false),
			statuses: []v1.ContainerStatus{
				{Name: "app", Ready: false, State: running(), Image: "nginx:1.27", ContainerID: "containerd://b1"},
				{Name: "sidecar", Ready: true, State: running(), Image: "busybox:1.36", ContainerID: "containerd://b2"},
			}},
		{role: "pending", phase: v1.PodPending,
			conds: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, LastTransitionTime: now}}},
		{role: "crashloop", node: s.Nodes[1], phase: v1.PodRunning,
			conds: readyConds(now, false),
			statuses: []v1.ContainerStatus{
				{Name: "app", RestartCount: 5, Image: "nginx:1.27", ContainerID: "containerd://c1",
					State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: now}}},
				{Name: "sidecar", Ready: true, State: running(), Image: "busybox:1.36", ContainerID: "containerd://c2"},
			}},
		{role: "oomkilled", node: s.Nodes[1], phase: v1.PodRunning,
			conds: readyConds(now, false),
			statuses: []v1.ContainerStatus{
				{Name: "app", RestartCount: 2, Image: "nginx:1.27", ContainerID: "containerd://d1",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, StartedAt: now, FinishedAt: now}}},
				{Name: "sidecar", Ready: true, State: running(), Image: "busybox:1.36", ContainerID: "containerd://d2"},
			}},
		{role: "completed", node: s.Nodes[1], phase: v1.PodSucceeded,
			conds: readyConds(now, false),
			statuses: []v1.ContainerStatus{
				{Name: "app", Image: "nginx:1.27", ContainerID: "containerd://e1",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0, StartedAt: now, FinishedAt: now}}},
				{Name: "sidecar", Image: "busybox:1.36", ContainerID: "containerd://e2",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0, StartedAt: now, FinishedAt: now}}},
			}},
	}
	for _, p := range pods {
		name := p.role
		pod := samplePod(namespace, name, p.node)
		created, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating pod %s/%s: %w", namespace, name, err)
		}
		created.Status = v1.PodStatus{
			Phase:             p.phase,
			Conditions:        p.conds,
			ContainerStatuses: p.statuses,
			QOSClass:          v1.PodQOSBurstable,
		}
		if p.node != "" {
			created.Status.HostIP = "10.1.0.1"
			created.Status.PodIP = "10.2.0." + fmt.Sprint(len(s.Pods)+1)
			created.Status.PodIPs = []v1.PodIP{{IP: created.Status.PodIP}}
			created.Status.StartTime = &now
		}
		if _, err := c.CoreV1().Pods(namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("writing status of pod %s/%s: %w", namespace, name, err)
		}
		s.Pods[p.role] = name
	}
	return s, nil
}

func readyConds(t metav1.Time, ready bool) []v1.PodCondition {
	st := v1.ConditionFalse
	if ready {
		st = v1.ConditionTrue
	}
	return []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: t},
		{Type: v1.ContainersReady, Status: st, LastTransitionTime: t},
		{Type: v1.PodReady, Status: st, LastTransitionTime: t},
	}
}

// samplePod is a pod with an app and a sidecar container, with requests and
// limits, on a node ("" for an unscheduled pod).
func samplePod(namespace, name, node string) *v1.Pod {
	res := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			NodeName: node,
			Containers: []v1.Container{
				{Name: "app", Image: "nginx:1.27", Resources: v1.ResourceRequirements{Requests: res("250m", "128Mi"), Limits: res("500m", "256Mi")}},
				{Name: "sidecar", Image: "busybox:1.36", Resources: v1.ResourceRequirements{Requests: res("50m", "32Mi"), Limits: res("100m", "64Mi")}},
			},
		},
	}
}

func createNode(ctx context.Context, c kubernetes.Interface, name string, tainted bool) error {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	if tainted {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
	}
	n.Spec.PodCIDR = "10.2.0.0/24"
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	created.Status = v1.NodeStatus{
		Capacity: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110"),
		},
		Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("3800m"), v1.ResourceMemory: resource.MustParse("15Gi"), v1.ResourcePods: resource.MustParse("110"),
		},
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.0.1"}, {Type: v1.NodeHostName, Address: name}},
		NodeInfo: v1.NodeSystemInfo{
			KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12", ContainerRuntimeVersion: "containerd://1.7.0",
			KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
		},
	}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status of node %s: %w", name, err)
	}
	return nil
}
