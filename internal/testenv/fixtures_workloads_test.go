package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestFixturesWorkloads checks that a real kube-apiserver accepts the
// workload fixtures, twice in one server (as two runs sharing it would), and
// that the objects it stores give a series in every family of the workload
// resources. Without the binaries it is skipped, except in CI (CI=true).
func TestFixturesWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesWorkloads, "workloads-a", "workloads-b"))

	const ns = "workloads-a"
	lists := map[string]func() (runtime.Object, error){
		"deployments":  func() (runtime.Object, error) { return c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}) },
		"replicasets":  func() (runtime.Object, error) { return c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}) },
		"statefulsets": func() (runtime.Object, error) { return c.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{}) },
		"daemonsets":   func() (runtime.Object, error) { return c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{}) },
		"replicationcontrollers": func() (runtime.Object, error) {
			return c.CoreV1().ReplicationControllers(ns).List(ctx, metav1.ListOptions{})
		},
	}
	counts := map[string]int{"deployments": 4, "replicasets": 2, "statefulsets": 3, "daemonsets": 2, "replicationcontrollers": 2}
	opts := watch.FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			r, ok := watch.Lookup(name)
			require.True(t, ok)
			l, err := list()
			require.NoError(t, err)
			items, err := meta.ExtractList(l)
			require.NoError(t, err)
			require.Len(t, items, counts[name])
			seen := renderedFamilies(t, r, opts, items)
			for _, f := range r.Families(opts) {
				require.True(t, seen[f.Name], "no fixture renders %s", f.Name)
			}
		})
	}
}

// renderedFamilies renders every object with every family and returns the
// names of the families that gave at least one series.
func renderedFamilies(t *testing.T, r *watch.Resource, opts watch.FamilyOptions, items []runtime.Object) map[string]bool {
	t.Helper()
	rr := r.NewRenderer(watch.RenderOptions{Families: opts, Select: func(watch.FamilyInfo) bool { return true }})
	seen := map[string]bool{}
	for _, obj := range items {
		_, set, err := rr.Render(obj)
		require.NoError(t, err)
		for i := 0; i < set.Len(); i++ {
			ls, err := encode.DecodeLabels(set.Labels(i))
			require.NoError(t, err)
			for _, l := range ls {
				if l.Name == encode.MetricName {
					seen[l.Value] = true
				}
			}
		}
	}
	return seen
}
