package customresource

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-state-push/kube-state-push/watch"
)

func crd(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	return object(t, y)
}

const establishedStatus = `status: {conditions: [{type: NamesAccepted, status: "True"}, {type: Established, status: "True"}]}`

// What a CRD serves: its served versions once it is established and not
// being deleted, with its plural and scope.
func TestDiscoveryServed(t *testing.T) {
	d := NewDiscovery()
	require.False(t, d.Synced())
	widgets := crd(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, uid: u1}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true}, {name: v2, served: false}, {name: v3}]
`+establishedStatus)
	gadgets := crd(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, uid: u2}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true}]
`)
	require.NoError(t, d.Replace([]any{widgets, gadgets}, ""))
	require.True(t, d.Synced())
	<-d.Changed()
	require.Equal(t, []Served{
		{GVK: GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets", Namespaced: true},
		{GVK: GroupVersionKind{Group: "example.com", Version: "v3", Kind: "Widget"}, Plural: "widgets", Namespaced: true},
	}, d.Served(), "gadgets not established yet; v2 not served")

	gadgets = crd(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, uid: u2}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true}]
`+establishedStatus)
	require.NoError(t, d.Update(gadgets))
	<-d.Changed()
	require.Len(t, d.Served(), 3)
	require.Equal(t, Served{GVK: GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, Plural: "gadgets"}, d.Served()[0])

	// Being deleted: its objects are going, so it serves nothing.
	deleting := widgets.DeepCopy()
	deleting.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-01T00:00:00Z"
	require.NoError(t, d.Update(deleting))
	require.Len(t, d.Served(), 1)
	require.NoError(t, d.Delete(cache.DeletedFinalStateUnknown{Key: "gadgets.example.com", Obj: gadgets}))
	require.Empty(t, d.Served())
}

// A configured version or kind "" or "*" resolves to every one served in
// the group; a kind nothing serves is missing.
func TestResolveWildcards(t *testing.T) {
	c := load(t, `
spec:
  resources:
    - groupVersionKind: {group: example.com, version: "*", kind: Widget}
      metrics: [{name: a, help: h, each: {type: Gauge, gauge: {path: [spec, a]}}}]
    - groupVersionKind: {group: example.com, version: v1, kind: ""}
      metrics: [{name: b, help: h, each: {type: Gauge, gauge: {path: [spec, b]}}}]
    - groupVersionKind: {group: other.com, version: v1, kind: Thing}
      metrics: [{name: c, help: h, each: {type: Gauge, gauge: {path: [spec, c]}}}]
`)
	served := []Served{
		{GVK: GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, Plural: "gadgets"},
		{GVK: GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets", Namespaced: true},
		{GVK: GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}, Plural: "widgets", Namespaced: true},
	}
	rs, missing := c.Resolve(served)
	var names []string
	for _, r := range rs {
		var fams []string
		for _, f := range r.Families(watch.FamilyOptions{}) {
			fams = append(fams, f.Name)
		}
		names = append(names, r.Name+" "+fams[0])
	}
	require.Equal(t, []string{
		"example.com/v1/widgets kube_customresource_b", // the last entry naming it
		"example.com/v2/widgets kube_customresource_a",
		"example.com/v1/gadgets kube_customresource_b",
	}, names)
	require.Equal(t, []GroupVersionKind{{Group: "other.com", Version: "v1", Kind: "Thing"}}, missing)
}
