package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Two agents sharded 0/2 and 1/2 produce together exactly the series one
// unsharded agent produces, with no series in both; shard 0 equals
// kube-state-metrics' --shard=0 --total-shards=2, object for object; and
// auto-sharding finds its shard from its StatefulSet.
func TestSharding(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "sharding"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "sharding")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)

	// Auto-sharding as pod 1 of a two-replica StatefulSet (created after the
	// sample cluster, so its own pods, none, change nothing).
	labels := map[string]string{"app": "ksp"}
	_, err = client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ksp"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "agent", Image: "kube-state-push"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Setenv("POD_NAME", "ksp-1")
	t.Setenv("POD_NAMESPACE", ns)

	// settings watches the pods and nodes of ns, with the object sharding
	// keys extra.
	settings := func(extra map[string]any) func(*agentConfig) {
		return func(c *agentConfig) {
			c.Resources, c.Namespaces = []string{"pods", "nodes"}, []string{ns}
			for k, v := range extra {
				c.set(k, v)
			}
		}
	}
	all := capturedSnapshot(t, ctx, settings(nil))
	s0 := capturedSnapshot(t, ctx, settings(map[string]any{"shard": 0, "total_shards": 2}))
	s1 := capturedSnapshot(t, ctx, settings(map[string]any{"shard": 1, "total_shards": 2}))
	auto := capturedSnapshot(t, ctx, settings(map[string]any{"auto_sharding": true}))
	whole, got0, got1 := all(), s0(), s1()
	require.Equal(t, got1, auto(), "auto-sharding as ksp-1 of 2 is shard 1 of 2")
	require.NotEmpty(t, whole)
	t.Logf("series: %d unsharded, %d in shard 0, %d in shard 1", len(whole), len(got0), len(got1))

	union := map[string]float64{}
	for k, v := range got0 {
		union[k] = v
	}
	for k, v := range got1 {
		_, both := got0[k]
		require.False(t, both, "in both shards: %s", k)
		union[k] = v
	}
	missing, extra, differ := diffSeries(whole, union)
	require.Empty(t, missing, "only in the unsharded agent")
	require.Empty(t, extra, "only in the shards")
	require.Empty(t, differ, "values differ")

	// Each object is where OwnedBy says: every pod and node's series are in
	// exactly its shard.
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	owned := func(m map[string]float64, family, label, value string) bool {
		for k := range m {
			if strings.HasPrefix(k, family+"{") && strings.Contains(k, label+`="`+value+`"`) {
				return true
			}
		}
		return false
	}
	type object struct{ family, label, value string }
	expect := map[object]bool{} // object: owned by shard 0
	for _, p := range pods.Items {
		expect[object{"kube_pod_info", "uid", string(p.UID)}] = watch.OwnedBy(p.UID, 0, 2)
	}
	for _, n := range nodes.Items {
		expect[object{"kube_node_info", "node", n.Name}] = watch.OwnedBy(n.UID, 0, 2)
	}
	for o, in0 := range expect {
		require.Equal(t, in0, owned(got0, o.family, o.label, o.value), "%v in shard 0", o)
		require.Equal(t, !in0, owned(got1, o.family, o.label, o.value), "%v in shard 1", o)
	}

	needBinary(t, "kube-state-metrics")
	t.Run("shard 0 equals kube-state-metrics", func(t *testing.T) {
		want, _ := compareWithKubeStateMetrics(t, ctx, []string{
			"--resources=pods,nodes",
			"--namespaces=" + ns,
			"--shard=0",
			"--total-shards=2",
		}, settings(map[string]any{"shard": 0, "total_shards": 2}))
		// The same objects, by kube-state-metrics' own hashing.
		for o, in0 := range expect {
			require.Equal(t, in0, owned(want, o.family, o.label, o.value), "%v in kube-state-metrics' shard 0", o)
		}
	})
}

// capturedSnapshot runs an agent configured by settings, with a capture
// receiver, until the test ends. The returned function waits until the
// agent is ready and returns its last complete snapshot, without staleness
// markers.
func capturedSnapshot(t *testing.T, ctx context.Context, settings func(*agentConfig)) func() map[string]float64 {
	t.Helper()
	capture := testenv.NewCapture()
	t.Cleanup(capture.Close)
	cfg := captureConfig(capture.URL())
	settings(cfg)
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})

	return func() map[string]float64 {
		t.Helper()
		a.waitReady(t)
		before := len(capture.Timestamps())
		var got map[string]float64
		eventually(t, 30*time.Second, "a complete snapshot after ready", func() error {
			ts := capture.Timestamps()
			if len(ts) < before+2 {
				return fmt.Errorf("%d snapshots since ready", len(ts)-before)
			}
			// The last but one, taken after ready: the last may still be
			// arriving.
			got = withoutStale(capture.Series(ts[len(ts)-2]))
			return nil
		})
		return got
	}
}
