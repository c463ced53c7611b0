package customresource

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// crdGVR is what Discovery watches.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Served is one kind a CRD serves.
type Served struct {
	// GVK is the group, version and kind.
	GVK GroupVersionKind
	// Plural is the resource name listed and watched.
	Plural string
	// Namespaced is the CRD's scope.
	Namespaced bool
}

// Discovery watches the CRDs, so that a configured kind is watched as soon
// as its CRD is established and stops being watched once the CRD goes,
// without a restart (kube-state-metrics #2142, #2296). It keeps only what
// each CRD serves, never the CRD. It is the reflector's store
// (cache.ReflectorStore).
type Discovery struct {
	// mu guards crds.
	mu sync.Mutex
	// crds holds what each established CRD serves, by CRD UID.
	crds map[types.UID][]Served
	// synced is set once the first list is stored.
	synced atomic.Bool
	// changed gets a token whenever what is served may have changed.
	changed chan struct{}
}

var _ cache.ReflectorStore = (*Discovery)(nil)

// NewDiscovery returns a discovery; Run runs it.
func NewDiscovery() *Discovery {
	return &Discovery{crds: map[types.UID][]Served{}, changed: make(chan struct{}, 1)}
}

// Run lists and watches the CRDs until ctx ends.
func (d *Discovery) Run(ctx context.Context, dc dynamic.Interface) {
	api := dc.Resource(crdGVR)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return api.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	}
	expected := &unstructured.Unstructured{}
	expected.SetGroupVersionKind(crdGVR.GroupVersion().WithKind("CustomResourceDefinition"))
	cache.NewReflectorWithOptions(lw, expected, d, cache.ReflectorOptions{Name: "kube-state-push/customresourcedefinitions"}).RunWithContext(ctx)
}

// Changed receives when what is served may have changed.
func (d *Discovery) Changed() <-chan struct{} { return d.changed }

// Synced reports whether the CRDs have been listed once.
func (d *Discovery) Synced() bool { return d.synced.Load() }

// Served returns every kind served now, in a stable order.
func (d *Discovery) Served() []Served {
	d.mu.Lock()
	var out []Served
	for _, s := range d.crds {
		out = append(out, s...)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Served) int {
		if c := strings.Compare(a.GVK.Group, b.GVK.Group); c != 0 {
			return c
		}
		if c := strings.Compare(a.GVK.Version, b.GVK.Version); c != 0 {
			return c
		}
		return strings.Compare(a.GVK.Kind, b.GVK.Kind)
	})
	return out
}

// Add stores a CRD.
func (d *Discovery) Add(obj any) error { d.set(obj); return nil }

// Update stores a CRD again.
func (d *Discovery) Update(obj any) error { d.set(obj); return nil }

// Delete forgets a CRD.
func (d *Discovery) Delete(obj any) error {
	if f, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = f.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	d.mu.Lock()
	delete(d.crds, u.GetUID())
	d.mu.Unlock()
	d.signal()
	return nil
}

// Replace stores the complete list.
func (d *Discovery) Replace(list []any, _ string) error {
	crds := map[types.UID][]Served{}
	for _, obj := range list {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if s := servedBy(u); len(s) > 0 {
				crds[u.GetUID()] = s
			}
		}
	}
	d.mu.Lock()
	d.crds = crds
	d.mu.Unlock()
	d.synced.Store(true)
	d.signal()
	return nil
}

// Resync does nothing: nothing is cached to resync.
func (d *Discovery) Resync() error { return nil }

func (d *Discovery) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s := servedBy(u)
	d.mu.Lock()
	if len(s) == 0 {
		delete(d.crds, u.GetUID())
	} else {
		d.crds[u.GetUID()] = s
	}
	d.mu.Unlock()
	d.signal()
}

func (d *Discovery) signal() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// servedBy returns the kinds a CRD serves: none unless it is established
// and not being deleted (its objects are then going), else one per served
// version. Fields of the wrong type leave the CRD or version out, as
// kube-state-metrics' discovery does (internal/discovery extractGVKPs).
func servedBy(u *unstructured.Unstructured) []Served {
	if u.GetDeletionTimestamp() != nil || !established(u) {
		return nil
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	if group == "" || kind == "" || plural == "" {
		return nil
	}
	var out []Served
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if served, present := m["served"]; present {
			if b, ok := served.(bool); !ok || !b {
				continue
			}
		}
		if name == "" {
			continue
		}
		out = append(out, Served{GVK: GroupVersionKind{Group: group, Version: name, Kind: kind}, Plural: plural, Namespaced: scope != "Cluster"})
	}
	return out
}

// established reports the CRD's Established condition: before it, its
// resources cannot be listed yet.
func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
