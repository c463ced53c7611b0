package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestFixturesNetwork checks that a real kube-apiserver accepts the network
// fixtures, twice in one server (as two runs sharing it would), and that the
// objects it stores give a series in every family of the network resources.
// Without the binaries it is skipped, except in CI (CI=true).
func TestFixturesNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := testenv.SharedControlPlane(t)
	c, err := cp.Client()
	require.NoError(t, err)
	clients, err := watch.NewClients(cp.RESTConfig(), "fixtures-test", watch.ReadBatching{})
	require.NoError(t, err)
	require.NoError(t, testenv.LoadFixtures(ctx, c, testenv.FixturesNetwork, "network-a", "network-b"))

	const ns = "network-a"
	terminating, err := c.CoreV1().Namespaces().Get(ctx, ns+"-terminating", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, v1.NamespaceTerminating, terminating.Status.Phase)

	opts := watch.FamilyOptions{LabelsAllowlist: []string{"*"}, AnnotationsAllowlist: []string{"*"}}
	for name, want := range networkFixtureCounts {
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

// networkFixtureCounts is how many objects of each resource the fixtures
// create for one namespace (namespaces: the caller's, -extra, -terminating).
var networkFixtureCounts = map[string]int{
	"services": 6, "endpoints": 2, "endpointslices": 3, "ingresses": 3,
	"ingressclasses": 2, "networkpolicies": 2, "namespaces": 3,
}
