package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestFixturesBatch checks that a real kube-apiserver accepts the batch
// fixtures, twice in one server (as two runs sharing it would), and that the
// objects it stores give a series in every family of the batch resources.
// Without the binaries it is skipped, except in CI (CI=true).
func TestFixturesBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	clients, err := watch.NewClients(cp.RESTConfig(), "fixtures-test", watch.ReadBatching{})
	require.NoError(t, err)
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesBatch, "batch-a", "batch-b"))

	const ns = "batch-a"
	opts := watch.FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}
	for name, want := range batchFixtureCounts {
		t.Run(name, func(t *testing.T) {
			r, ok := watch.Lookup(name)
			require.True(t, ok)
			items := listOwn(ctx, t, clients, r, ns)
			require.Len(t, items, want)
			seen := renderedFamilies(t, r, opts, items)
			for _, f := range r.Families(opts) {
				require.True(t, seen[f.Name], "no fixture renders %s", f.Name)
			}
		})
	}
}

// batchFixtureCounts is how many objects of each resource the fixtures
// create in one namespace.
var batchFixtureCounts = map[string]int{
	"cronjobs": 8, "jobs": 7, "horizontalpodautoscalers": 2, "poddisruptionbudgets": 3,
}
