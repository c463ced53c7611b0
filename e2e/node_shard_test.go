package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestNodeShardedLikeOne installs the chart twice into the same cluster,
// pushing to one receiver under two cluster labels: once with one replica,
// once as a StatefulSet of two with autosharding. Together the two shards
// deliver exactly the series the one replica delivers (the releases' own
// objects left out, as their names differ), none from both shards, and
// the receiver refuses nothing.
func TestNodeShardedLikeOne(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	c, err := n.Client()
	require.NoError(t, err)
	prom, url := nodeReceiver(t, n, "")
	// A short interval keeps the second look below short.
	const interval = 10 * time.Second
	values := func(labels string) string {
		return fmt.Sprintf("remoteWrite:\n  - url: %s/api/v1/write\nexternalLabels:\n%sextraConfig:\n  snapshot_interval: %s\n", url, labels, interval)
	}
	installChart(t, n, "ksp-one", "ksp-one", values("  cluster: one\n"))
	// agent_pod tells the shards' pushes apart, so that a state series
	// both shards pushed would show twice. (Their self-metrics stay apart
	// without it, by shard_ordinal.)
	installChart(t, n, "ksp-two", "ksp-two", values("  cluster: two\n  agent_pod: ${POD_NAME}\n")+"replicas: 2\nautosharding:\n  enabled: true\n")
	eventually(t, 2*time.Minute, "both shards Ready", func() error {
		list, err := c.CoreV1().Pods("ksp-two").List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=ksp-two"})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range list.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != 2 {
			return fmt.Errorf("%d of 2 shards Ready", ready)
		}
		return nil
	})
	bothReady := time.Now()

	// Series of the releases' own objects carry their names; the agent's
	// self-metrics are per replica.
	own := func(m map[string]string) bool {
		for _, v := range m {
			if strings.Contains(v, "ksp-one") || strings.Contains(v, "ksp-two") {
				return true
			}
		}
		return false
	}
	// labelSets returns the label sets of cluster's state series, without
	// cluster and agent_pod, and how many each agent_pod pushed.
	labelSets := func(cluster string) ([]string, map[string]int, error) {
		res, err := prom.Query(t.Context(), fmt.Sprintf(`{cluster=%q,__name__=~"kube_.+",__name__!~"kube_state_push_.+"}`, cluster))
		if err != nil {
			return nil, nil, err
		}
		var out []string
		by := map[string]int{}
		for _, s := range res {
			m := maps.Clone(s.Metric)
			pod := m["agent_pod"]
			delete(m, "cluster")
			delete(m, "agent_pod")
			if own(m) {
				continue
			}
			by[pod]++
			out = append(out, sortedLabels(m))
		}
		slices.Sort(out)
		return out, by, nil
	}
	var one []string
	var byPod map[string]int
	same := func() error {
		var err error
		if one, _, err = labelSets("one"); err != nil {
			return err
		}
		two, by, err := labelSets("two")
		if err != nil {
			return err
		}
		if len(one) == 0 {
			return fmt.Errorf("no series from the one replica yet")
		}
		// A series both shards deliver is here twice, once per agent_pod.
		if d := cmp.Diff(one, two); d != "" {
			return fmt.Errorf("series (-one replica +two shards):\n%s", d)
		}
		byPod = by
		return nil
	}
	eventually(t, 3*snapshotInterval, "two shards deliver what one replica does", same)
	// Again once each shard has pushed two more snapshots: a series the
	// other shard also delivers would be there by now.
	time.Sleep(time.Until(bothReady.Add(2*interval + interval/2)))
	require.NoError(t, same())
	require.Len(t, byPod, 2, "series by shard: each shard delivers some")
	refused, err := receiverRefused(t.Context(), prom)
	require.NoError(t, err)
	require.Zero(t, refused, "remote-write requests the receiver refused (duplicate or out-of-order samples)")
	t.Logf("one replica and two shards: the same %d series (the releases' own left out), none from both shards (by shard %v), 0 writes refused; node %s; test took %s",
		len(one), byPod, testenv.NodeName, time.Since(started).Round(100*time.Millisecond))
}
