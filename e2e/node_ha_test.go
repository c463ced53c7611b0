package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestNodeHALeaderDeleted installs the chart with two replicas and leader
// election, deletes the leader's Pod, and wants the other to hold the
// Lease and push within the lease duration plus one snapshot interval.
func TestNodeHALeaderDeleted(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	c, err := n.Client()
	require.NoError(t, err)
	prom, url := nodeReceiver(t, n, "")
	const ns, cluster, release = "ksp-ha", "node-ha", "ksp-ha"
	const leaseDuration = 15 * time.Second // the chart's default
	installChart(t, n, release, ns, fmt.Sprintf(`remoteWrite:
  - url: %s/api/v1/write
externalLabels:
  cluster: %s
replicas: 2
leaderElection:
  enabled: true
`, url, cluster))
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, "two Ready Pods", func() error {
		list, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					pods = append(pods, p)
				}
			}
		}
		if len(pods) != 2 {
			return fmt.Errorf("%d Ready Pods", len(pods))
		}
		return nil
	})
	holder := func() (string, error) {
		l, err := c.CoordinationV1().Leases(ns).Get(t.Context(), release+"-kube-state-push", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "", fmt.Errorf("lease %s has no holder", l.Name)
		}
		return *l.Spec.HolderIdentity, nil
	}
	var leader string
	eventually(t, time.Minute, "a leader", func() error {
		var err error
		leader, err = holder()
		return err
	})
	nodeInfo := fmt.Sprintf(`timestamp(kube_node_info{cluster=%q,node=%q})`, cluster, testenv.NodeName)
	queryLog(t, prom, 2*snapshotInterval, nodeInfo, nonEmpty(nil))

	deleted := time.Now()
	require.NoError(t, c.CoreV1().Pods(ns).Delete(t.Context(), leader, metav1.DeleteOptions{}))
	within := leaseDuration + snapshotInterval
	var next string
	eventually(t, within, "the other Pod holds the Lease", func() error {
		h, err := holder()
		if err != nil {
			return err
		}
		if h == leader {
			return fmt.Errorf("still held by %s", leader)
		}
		next = h
		return nil
	})
	took := time.Since(deleted)
	// The deleted leader pushes a last snapshot as it stops: a sample
	// newer than a few seconds after the deletion is the new leader's.
	after := float64(deleted.Add(5*time.Second).UnixMilli()) / 1000
	queryLog(t, prom, within-took, nodeInfo, nonEmpty(func(s testenv.Sample) error {
		if s.Value < after {
			return fmt.Errorf("newest sample at %.3f, want after %.3f", s.Value, after)
		}
		return nil
	}))
	t.Logf("leader %s deleted: %s held the Lease after %s and pushed after %s (bound %s); test took %s",
		leader, next, took.Round(100*time.Millisecond), time.Since(deleted).Round(100*time.Millisecond), within, time.Since(started).Round(100*time.Millisecond))
}
