package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestPodStates(t *testing.T) {
	counts := map[podState]int{}
	for i := range 1000 {
		counts[podStateOf(i)]++
	}
	require.Equal(t, map[podState]int{
		stateRunning: 870, statePending: 30, stateCrashLoop: 30, stateOOMKilled: 20,
		stateCompleted: 20, stateNotReady: 20, stateEvicted: 10,
	}, counts)
}

func TestBuildPod(t *testing.T) {
	now := metav1.NewTime(time.Unix(1_700_000_000, 0))
	spec := clusterSpec{pods: 100, nodes: 7, containers: 2, namespaces: 1}
	ref := owner("apps/v1", "ReplicaSet", "rs", "uid-1")
	labels := map[string]string{"app": "x"}

	// Pod 3 is a crash-looping one with an extra container and no init
	// container; pod 4 is pending with an init container.
	p := buildPod("ns", 3, spec, labels, ref, now)
	require.Equal(t, podName(3), p.Name)
	require.Equal(t, nodeName(3), p.Spec.NodeName)
	require.Len(t, p.Spec.Containers, 3)
	require.Empty(t, p.Spec.InitContainers)
	require.Equal(t, markerContainer, p.Spec.Containers[0].Name)
	require.Contains(t, p.Spec.Containers[0].Resources.Limits, v1.ResourceMemory)
	require.Contains(t, p.Spec.Containers[1].Resources.Requests, v1.ResourceCPU)
	require.Equal(t, v1.PodRunning, p.Status.Phase)
	app := p.Status.ContainerStatuses[0]
	require.Equal(t, "CrashLoopBackOff", app.State.Waiting.Reason)
	require.Equal(t, int32(5+3%7), app.RestartCount)
	require.Equal(t, "Error", app.LastTerminationState.Terminated.Reason)
	require.Equal(t, v1.ConditionFalse, p.Status.Conditions[3].Status)

	p = buildPod("ns", 2, spec, labels, ref, now)
	require.Equal(t, v1.PodPending, p.Status.Phase)
	require.Len(t, p.Spec.InitContainers, 1)
	require.Len(t, p.Status.InitContainerStatuses, 1)
	for _, cs := range p.Status.ContainerStatuses {
		require.Equal(t, "ContainerCreating", cs.State.Waiting.Reason)
	}

	p = buildPod("ns", 6, spec, labels, ref, now)
	require.Equal(t, "OOMKilled", p.Status.ContainerStatuses[0].LastTerminationState.Terminated.Reason)
	p = buildPod("ns", 12, spec, labels, ref, now)
	require.Equal(t, v1.PodFailed, p.Status.Phase)
	require.Equal(t, "Evicted", p.Status.Reason)
	p = buildPod("ns", 50, spec, labels, ref, now)
	require.Equal(t, v1.PodRunning, p.Status.Phase)
	require.Equal(t, v1.ConditionTrue, p.Status.Conditions[3].Status)
	for _, cs := range p.Status.ContainerStatuses {
		require.NotNil(t, cs.State.Running)
		require.True(t, cs.Ready)
	}
}

func TestLoadCluster(t *testing.T) {
	c := fake.NewClientset()
	spec := clusterSpec{pods: 25, nodes: 4, containers: 2, namespaces: 2}
	cl, err := loadCluster(t.Context(), c, spec, 4, t.Logf)
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		"namespaces": 2, "nodes": 4, "deployments": 3, "replicasets": 3,
		"services": 3, "configmaps": 3, "secrets": 3, "pods": 25,
	}, cl.objects)

	var pods int
	for i := range spec.namespaces {
		list, err := c.CoreV1().Pods(namespaceName(i)).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		pods += len(list.Items)
		for _, p := range list.Items {
			require.NotEmpty(t, p.Status.ContainerStatuses, "status written for %s", p.Name)
			require.Len(t, p.OwnerReferences, 1)
			require.Equal(t, "ReplicaSet", p.OwnerReferences[0].Kind)
		}
	}
	require.Equal(t, 25, pods)
	node, err := c.CoreV1().Nodes().Get(t.Context(), nodeName(0), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "v1.37.2", node.Status.NodeInfo.KubeletVersion)
	// Pods 13..24 are running and ready (0..12 each have another state).
	require.Len(t, cl.churnable, 12)

	_, err = loadCluster(t.Context(), c, clusterSpec{pods: 0, nodes: 1, containers: 1, namespaces: 1}, 1, t.Logf)
	require.ErrorContains(t, err, "pods (0)")
}

func TestLoadClusterStopsOnError(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is full")
	})
	_, err := loadCluster(t.Context(), c, clusterSpec{pods: 50, nodes: 2, containers: 1, namespaces: 1}, 4, t.Logf)
	require.ErrorContains(t, err, "creating pod bench-000/")
	require.ErrorContains(t, err, "etcd is full")
}

func TestParallel(t *testing.T) {
	seen := make([]bool, 100)
	require.NoError(t, parallel(t.Context(), 8, len(seen), func(_ context.Context, i int) error {
		seen[i] = true
		return nil
	}))
	for i, s := range seen {
		require.True(t, s, "job %d ran", i)
	}
	err := parallel(t.Context(), 2, 1000, func(_ context.Context, i int) error {
		if i == 3 {
			return errors.New("job 3 failed")
		}
		return nil
	})
	require.EqualError(t, err, "job 3 failed")
}

func TestChurn(t *testing.T) {
	c := fake.NewClientset()
	spec := clusterSpec{pods: 20, nodes: 2, containers: 2, namespaces: 1}
	cl, err := loadCluster(t.Context(), c, spec, 2, t.Logf)
	require.NoError(t, err)
	require.Len(t, cl.churnable, 7)

	r := newReceiver("")
	ch := newChurner(c, r, cl.churnable, 100)
	for range 9 {
		ch.update(t.Context())
	}
	updates, failures := ch.stats()
	require.Equal(t, 9, updates)
	require.Zero(t, failures)

	// Round robin over 7 pods: the first two were written twice, the newer
	// marker superseding the older.
	first := cl.churnable[0]
	got, err := c.CoreV1().Pods(first.Namespace).Get(t.Context(), first.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(markerBase+7), got.Status.ContainerStatuses[0].RestartCount)
	require.Equal(t, markerContainer, got.Status.ContainerStatuses[0].Name)
	_, missing := r.lags(time.Time{}, time.Now())
	require.Equal(t, 7, missing, "one pending marker per pod")
	require.Equal(t, int64(2), r.superseded)

	// A failed write leaves no marker behind and is counted.
	c.PrependReactor("update", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("conflict")
	})
	r.reset()
	ch.update(t.Context())
	_, failures = ch.stats()
	require.Equal(t, 1, failures)
	_, missing = r.lags(time.Time{}, time.Now())
	require.Zero(t, missing)
}

// TestEdgeProfile checks the edge profile's objects: about 100, most pods
// running (spread states), and config maps named apart.
func TestEdgeProfile(t *testing.T) {
	c := fake.NewClientset()
	cl, err := loadCluster(t.Context(), c, edgeSpec, 4, t.Logf)
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		"namespaces": 3, "nodes": 3, "deployments": 6, "replicasets": 6,
		"services": 6, "configmaps": 60, "secrets": 6, "pods": 12,
	}, cl.objects)
	// Spread, pods 0, 3 and 11 are pending, not ready and OOM-killed.
	require.Len(t, cl.churnable, 9)
	cms, err := c.CoreV1().ConfigMaps(namespaceName(0)).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, cms.Items, 20, "deployments 0 and 3, 10 config maps each")
	rs, err := c.AppsV1().ReplicaSets(namespaceName(1)).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, r := range rs.Items {
		require.Equal(t, int32(2), *r.Spec.Replicas)
	}

	// Spread or not, each full hundred has the same states.
	counts := map[podState]int{}
	spread := clusterSpec{spreadStates: true}
	for i := range 1000 {
		counts[spread.stateOf(i)]++
	}
	require.Equal(t, map[podState]int{
		stateRunning: 870, statePending: 30, stateCrashLoop: 30, stateOOMKilled: 20,
		stateCompleted: 20, stateNotReady: 20, stateEvicted: 10,
	}, counts)
	require.Equal(t, podStateOf(3), clusterSpec{}.stateOf(3), "not spread: as before")
	require.Equal(t, stateNotReady, spread.stateOf(3), "3 × 37 mod 100 = 11")
}
