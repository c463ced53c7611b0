package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/customresource"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Bad documents are in badConfigs (config_test.go). A good document loads, prints back in the effective configuration, and
// gives its families' HELP and type to the endpoints' metadata.
func TestCustomResourceStateConfig(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("testdata", "custom_resource_state.yaml"))
	require.NoError(t, err)
	md := familyMetadata(cfg)
	require.Equal(t, encode.Metadata{Type: encode.TypeGauge, Help: "Replicas of the widget."}, md["kube_customresource_replicas"])
	require.Equal(t, encode.Metadata{Type: encode.TypeStateSet, Help: "Phase of the widget."}, md["kube_customresource_phase"])

	out, err := cfg.Effective()
	require.NoError(t, err)
	again, err := config.Load(out, "effective")
	require.NoError(t, err)
	require.Equal(t, cfg.CustomResourceState.Doc, again.CustomResourceState.Doc)
}

// Custom resources go through the built-in resources' machinery: watch
// scopes from the CRD's scope and the namespaces keys, and sharding by
// object UID in the series map.
func TestCustomResourceScopesAndSharding(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("testdata", "custom_resource_state.yaml"))
	require.NoError(t, err)
	cfg.Watch.Namespaces = []string{"a", "b"}
	served := func(namespaced bool) *watch.Resource {
		rs, missing := cfg.CustomResourceState.Resolve([]customresource.Served{{
			GVK:    customresource.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"},
			Plural: "widgets", Namespaced: namespaced,
		}})
		require.Empty(t, missing)
		require.Len(t, rs, 1)
		return rs[0]
	}
	require.Equal(t, []watch.Scope{{Namespace: "a"}, {Namespace: "b"}}, cfg.Watch.Scopes(served(true)))
	require.Equal(t, []watch.Scope{{}}, cfg.Watch.Scopes(served(false)))

	r := served(true)
	sm := newSeriesMap(r.Name, r.NewRenderer(watch.RenderOptions{}), slog.New(slog.DiscardHandler), newMetrics(prometheus.NewRegistry()).forResource(r.Name))
	sm.owns = func(uid types.UID) bool { return watch.OwnedBy(uid, 0, 2) }
	var mine, theirs int
	for i := range 20 {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprint("w", i), "namespace": "a", "uid": fmt.Sprint("uid-", i)},
			"spec":     map[string]any{"replicas": int64(i)},
		}}
		require.NoError(t, sm.Add(u))
		if watch.OwnedBy(u.GetUID(), 0, 2) {
			mine++
		} else {
			theirs++
		}
	}
	require.NotZero(t, theirs)
	require.Len(t, sm.objects, mine, "only this shard's objects")
}

// Without a dynamic client (clients given by the caller), custom resources
// are not watched, which is logged once and keeps nothing from Ready.
func TestCustomResourcesWithoutDynamicClient(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("testdata", "custom_resource_state.yaml"))
	require.NoError(t, err)
	cfg.ListenAddress = ""
	a, err := New(cfg, Options{Clients: &watch.Clients{}, Registry: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.False(t, a.customReady(), "waits for the custom resources")
	a.watchCtx = t.Context()
	require.Empty(t, a.customResources(cfg))
	require.Empty(t, a.customResources(cfg))
	require.True(t, a.customReady())
}
