package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// series_labels_from_object on the real API server, into VictoriaMetrics:
// every pod series carries its pod's team label, as many series arrive as
// from an agent without the option, and relabelling a pod ends its old
// series with staleness markers in the snapshot that starts the new ones.
func TestSeriesLabelsFromObject(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "object-labels"
	createNamespace(t, client, ns)
	defer deleteNamespace(t, client, ns)
	for i := range 3 {
		_, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: ns,
				Labels: map[string]string{"team": "blue", "app.kubernetes.io/name": "shop"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	vm := startVM(t)
	start := func(run string, labels map[string][]string) *testAgent {
		conf := captureConfig(vm.WriteURL())
		conf.Resources, conf.Namespaces = []string{"pods"}, []string{ns}
		conf.ExternalLabels = map[string]string{"run": run}
		if labels != nil {
			conf.set("series_labels_from_object", labels)
		}
		return startAgent(t, agentOptions{ctx: ctx, config: conf})
	}
	with := start("with", map[string][]string{"pods": {"team", "app.kubernetes.io/name"}})
	defer func() { require.NoError(t, with.stop()) }()
	without := start("without", nil)
	defer func() { require.NoError(t, without.stop()) }()

	// live returns the run's series whose last sample is not a staleness
	// marker, by key, with label_* left out when strip is set.
	live := func(run string, strip bool) (map[string]map[string]string, error) {
		series, err := vm.Export(ctx, fmt.Sprintf(`{run=%q}`, run))
		if err != nil {
			return nil, err
		}
		out := map[string]map[string]string{}
		for _, s := range series {
			if math.IsNaN(s.Values[len(s.Values)-1]) {
				continue
			}
			m := map[string]string{}
			for k, v := range s.Metric {
				objectLabel := k == "label_team" || k == "label_app_kubernetes_io_name"
				if k != "run" && (!strip || !objectLabel) {
					m[k] = v
				}
			}
			out[exportKey(m)] = s.Metric
		}
		return out, nil
	}
	var withSeries, withoutSeries map[string]map[string]string
	eventually(t, time.Minute, "both agents' series of the three pods", func() error {
		if withSeries, err = live("with", true); err != nil {
			return err
		}
		if withoutSeries, err = live("without", false); err != nil {
			return err
		}
		if len(withSeries) < 3*10 || len(withSeries) != len(withoutSeries) {
			return fmt.Errorf("%d series with the option, %d without", len(withSeries), len(withoutSeries))
		}
		return nil
	})
	require.ElementsMatch(t, mapKeysOf(withoutSeries), mapKeysOf(withSeries), "the same series, but for the object's labels")
	for k, m := range withSeries {
		require.Equal(t, "blue", m["label_team"], "%s", k)
		require.Equal(t, "shop", m["label_app_kubernetes_io_name"], "%s", k)
	}

	// Relabel p0: its blue series end, its red ones start, at one snapshot.
	patched := time.Now()
	_, err = client.CoreV1().Pods(ns).Patch(ctx, "p0", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"red"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	var ended, started int
	var endedAt int64
	eventually(t, 30*time.Second, "p0's series relabelled", func() error {
		series, err := vm.Export(ctx, `{run="with",pod="p0"}`)
		if err != nil {
			return err
		}
		// By series without label_team: the blue series' staleness
		// marker and the red series' first sample.
		stale, first := map[string]int64{}, map[string]int64{}
		lastLive := map[string]int64{}
		for _, s := range series {
			m := map[string]string{}
			for k, v := range s.Metric {
				if k != "label_team" {
					m[k] = v
				}
			}
			k := exportKey(m)
			switch s.Metric["label_team"] {
			case "blue":
				n := len(s.Values)
				if n < 2 || !math.IsNaN(s.Values[n-1]) {
					return fmt.Errorf("%s: blue series not ended", k)
				}
				stale[k], lastLive[k] = s.Timestamps[n-1], s.Timestamps[n-2]
			case "red":
				first[k] = s.Timestamps[0]
			}
		}
		if len(stale) == 0 || len(first) != len(stale) {
			return fmt.Errorf("%d blue series ended, %d red series started", len(stale), len(first))
		}
		// The snapshots the agent took, read off a pod left alone: a
		// loaded machine may take one late, so "one interval" is "the
		// snapshot just before", not a fixed number of milliseconds.
		snapshots, err := snapshotTimes(ctx, vm, `{run="with",pod="p1"}`)
		if err != nil {
			return err
		}
		for k, at := range stale {
			if first[k] != at {
				return fmt.Errorf("%s: blue ended at %d, red started at %d", k, at, first[k])
			}
			if prev := snapshotBefore(snapshots, at); lastLive[k] != prev {
				return fmt.Errorf("%s: last sample at %d, but the snapshot before its end was at %d", k, lastLive[k], prev)
			}
		}
		ended, started = len(stale), len(first)
		for _, at := range stale {
			endedAt = at
		}
		return nil
	})
	withSeries, err = live("with", true)
	require.NoError(t, err)
	withoutSeries, err = live("without", false)
	require.NoError(t, err)
	require.Len(t, withSeries, len(withoutSeries), "no extra series after the relabel")
	// The next snapshot after the change: within one interval and the
	// read batching window (a tenth of it), with room for a loaded machine
	// to deliver the watch event late, but not for a second interval.
	after := time.UnixMilli(endedAt).Sub(patched)
	require.Less(t, after, 1500*time.Millisecond, "ended within one interval of the relabel")
	t.Logf("%d series with the option and without; p0 relabelled: %d series ended with a staleness marker %s after the change, in the snapshot that started %d",
		len(withSeries), ended, after.Round(time.Millisecond), started)
}

// snapshotTimes is every timestamp of the series matching selector: the
// snapshots an agent took while they lived.
func snapshotTimes(ctx context.Context, vm *testenv.VictoriaMetrics, selector string) ([]int64, error) {
	series, err := vm.Export(ctx, selector)
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	for _, s := range series {
		for _, ts := range s.Timestamps {
			seen[ts] = true
		}
	}
	out := make([]int64, 0, len(seen))
	for ts := range seen {
		out = append(out, ts)
	}
	slices.Sort(out)
	return out, nil
}

// snapshotBefore is the latest of the sorted snapshots before at, or -1.
func snapshotBefore(snapshots []int64, at int64) int64 {
	i, _ := slices.BinarySearch(snapshots, at)
	if i == 0 {
		return -1
	}
	return snapshots[i-1]
}
