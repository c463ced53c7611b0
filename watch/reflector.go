package watch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// NewReflector returns a reflector that lists and watches the resource (in
// one namespace, or all for "", restricted by a field selector if not
// empty) and writes every event to store. It keeps no cache of its own:
// store receives each object and decides what to keep.
func (r *Resource) NewReflector(c Clients, namespace, fieldSelector string, store cache.ReflectorStore) *cache.Reflector {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fieldSelector
			return r.list(ctx, c, namespace, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fieldSelector
			return r.watch(ctx, c, namespace, o)
		},
	}
	return cache.NewReflectorWithOptions(lw, r.expected, store, cache.ReflectorOptions{
		Name: "kube-state-push/" + r.Name,
	})
}

// List lists the resource's objects in one namespace ("" for all), with the
// same list call its reflector makes, one page.
func (r *Resource) List(ctx context.Context, c Clients, namespace string) ([]runtime.Object, error) {
	l, err := r.list(ctx, c, namespace, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	return items, nil
}
