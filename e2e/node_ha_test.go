package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	// The leader releases the Lease as it stops, so the Pod the
	// ReplicaSet starts in its place may win it before the standby's next
	// retry: either is a takeover.
	newLeader := "the replacement Pod"
	for _, p := range pods {
		if p.Name == next {
			newLeader = "the standby"
		}
	}
	// The deleted leader pushes a last snapshot as it stops: a sample
	// newer than a few seconds after the deletion is the new leader's.
	after := float64(deleted.Add(5*time.Second).UnixMilli()) / 1000
	queryLog(t, prom, within-took, nodeInfo, nonEmpty(func(s testenv.Sample) error {
		if s.Value < after {
			return fmt.Errorf("newest sample at %.3f, want after %.3f", s.Value, after)
		}
		return nil
	}))
	pushed := time.Since(deleted)

	// The receiver's view of the whole run: no gap in a steady series
	// longer than the bound, and nothing refused. Prometheus refuses a
	// sample at a timestamp it holds with another value (and an older
	// one) with 400, so two leaders pushing different values would show
	// there.
	raw, err := prom.RawSamples(t.Context(), fmt.Sprintf(`kube_node_info{cluster=%q,node=%q}`, cluster, testenv.NodeName), time.Since(started)+time.Minute)
	require.NoError(t, err)
	require.Len(t, raw, 1)
	ts := raw[0].Timestamps
	var longest time.Duration
	near := 0
	for i := 1; i < len(ts); i++ {
		d := time.Duration(ts[i]-ts[i-1]) * time.Millisecond
		longest = max(longest, d)
		if d < snapshotInterval/2 {
			near++
		}
	}
	require.LessOrEqual(t, longest, within, "longest gap between samples of kube_node_info, timestamps %v", ts)
	refused, err := receiverRefused(t.Context(), prom)
	require.NoError(t, err)
	require.Zero(t, refused, "remote-write requests the receiver refused (duplicate or out-of-order samples)")
	t.Logf("leader %s deleted: %s (%s) held the Lease after %s and pushed after %s (bound %s); at the receiver %d samples of kube_node_info, longest gap %s, %d closer than half an interval, 0 writes refused; test took %s",
		leader, next, newLeader, took.Round(100*time.Millisecond), pushed.Round(100*time.Millisecond), within,
		len(ts), longest, near, time.Since(started).Round(100*time.Millisecond))
}

// receiverRefused returns how many remote-write requests Prometheus
// answered with a 4xx, from its own /metrics: it refuses a request
// holding a sample at a timestamp it has with another value, or an older
// one, with 400.
func receiverRefused(ctx context.Context, p *testenv.Prometheus) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("reading %s/metrics: %w", p.URL, err)
	}
	var refused float64
	for _, m := range families["prometheus_http_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["handler"] == "/api/v1/write" && strings.HasPrefix(labels["code"], "4") {
			refused += m.GetCounter().GetValue()
		}
	}
	return refused, nil
}
