package testenv_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestMain stops the control plane the fixture tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}

// listOwn lists a resource's objects that a fixture test made for ns: those
// in ns, or, for a cluster-scoped resource, those named ns or ns-*.
func listOwn(ctx context.Context, t *testing.T, c watch.Clients, r *watch.Resource, ns string) []runtime.Object {
	t.Helper()
	items, err := r.List(ctx, c, ns)
	require.NoError(t, err)
	if r.Namespaced {
		return items
	}
	var mine []runtime.Object
	for _, it := range items {
		name := watch.NameOf(it)
		if name == ns || strings.HasPrefix(name, ns+"-") {
			mine = append(mine, it)
		}
	}
	return mine
}
