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
// objects left out, as their names differ).
func TestNodeShardedLikeOne(t *testing.T) {
	n := sharedNode(t)
	started := time.Now()
	c, err := n.Client()
	require.NoError(t, err)
	prom, url := nodeReceiver(t, n, "")
	values := func(cluster string) string {
		return fmt.Sprintf("remoteWrite:\n  - url: %s/api/v1/write\nexternalLabels:\n  cluster: %s\n", url, cluster)
	}
	installChart(t, n, "ksp-one", "ksp-one", values("one"))
	installChart(t, n, "ksp-two", "ksp-two", values("two")+"replicas: 2\nautosharding:\n  enabled: true\n")
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
	labelSets := func(cluster string) ([]string, error) {
		res, err := prom.Query(t.Context(), fmt.Sprintf(`{cluster=%q,__name__=~"kube_.+",__name__!~"kube_state_push_.+"}`, cluster))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, s := range res {
			if own(s.Metric) {
				continue
			}
			m := maps.Clone(s.Metric)
			delete(m, "cluster")
			out = append(out, sortedLabels(m))
		}
		slices.Sort(out)
		return out, nil
	}
	var one []string
	eventually(t, 3*snapshotInterval, "two shards deliver what one replica does", func() error {
		var err error
		if one, err = labelSets("one"); err != nil {
			return err
		}
		two, err := labelSets("two")
		if err != nil {
			return err
		}
		if len(one) == 0 {
			return fmt.Errorf("no series from the one replica yet")
		}
		if d := cmp.Diff(one, two); d != "" {
			return fmt.Errorf("series (-one replica +two shards):\n%s", d)
		}
		return nil
	})
	t.Logf("one replica and two shards: the same %d series (the releases' own left out); node %s; test took %s",
		len(one), testenv.NodeName, time.Since(started).Round(100*time.Millisecond))
}
