package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadBatchingKeepsTicks: with the default read batching (a second at
// a 10 s snapshot_interval), a change the API server sends shortly before a
// snapshot is due, right after another one (whose read starts a window that
// would end after the snapshot), is in that snapshot: the connection is
// read from 100 ms before a tick. Real kube-apiserver and etcd, the agent
// in-process with its real clients.
func TestReadBatchingKeepsTicks(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "read-batching"
	createPods(ctx, t, client, ns, "marked")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	rec := newRecorder(t, nil)
	const interval = 10 * time.Second
	cfg := captureConfig(rec.URL("/write")).
		set("metric_allowlist", []string{"kube_pod_labels"}).
		set("metric_labels_allowlist", map[string][]string{"pods": {"mark"}})
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.SnapshotInterval = interval
	startAgent(t, agentOptions{config: cfg})

	podSeries := []string{`__name__="kube_pod_labels"`, `pod="marked"`}
	eventually(t, 3*interval, "two snapshots of the pod", rec.needTimestamps(2, "/write", podSeries...))
	mark := func(v string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "marked", metav1.GetOptions{})
		require.NoError(t, err)
		p.Labels["mark"] = v
		_, err = client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	// Ticks come every interval from the agent's start; samples carry the
	// tick's time.
	tss := rec.timestamps("/write", podSeries...)
	next := time.UnixMilli(tss[len(tss)-1]).Add(interval)
	for time.Until(next) < 2*time.Second {
		next = next.Add(interval)
	}
	time.Sleep(time.Until(next.Add(-700 * time.Millisecond)))
	mark("first")
	time.Sleep(time.Until(next.Add(-350 * time.Millisecond)))
	mark("second")

	at := next.UnixMilli()
	eventually(t, 2*interval, "the snapshot due after the changes", func() error {
		if got := rec.timestamps("/write", podSeries...); got[len(got)-1] < at {
			return fmt.Errorf("last snapshot at %d, waiting for %d", got[len(got)-1], at)
		}
		return nil
	})
	var marks []string
	for k := range rec.liveAt("/write", at) {
		if containsAll(k, podSeries) {
			marks = append(marks, k)
		}
	}
	require.Len(t, marks, 1, "one live kube_pod_labels series of the pod at %d", at)
	require.Contains(t, marks[0], `label_mark="second"`,
		"the change sent 350 ms before the snapshot is in it (the first change's read started a 1 s window)")
}
