package watch

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// CustomResource describes a custom resource to watch with the dynamic
// client (package customresource builds them from kube-state-metrics'
// CustomResourceState configuration). Its objects arrive as
// *unstructured.Unstructured and are rendered, like every other resource's,
// once per event into series for the same series maps.
type CustomResource struct {
	// Name is the resource's name in logs and self-metrics.
	Name string
	// GVR is what is listed and watched; Kind is the objects' kind.
	GVR  schema.GroupVersionResource
	Kind string
	// Namespaced is true for a CRD of scope Namespaced.
	Namespaced bool
	// LabelSelector, if not empty, restricts the list and watch.
	LabelSelector string
	// Definition says what the families render; two resources of equal
	// definitions render the same series (see Resource.Definition).
	Definition string
	// Families returns the families, each call with scratch space of its
	// own (a renderer is used by one goroutine).
	Families func() []Family[*unstructured.Unstructured]
}

// errNoDynamicClient is returned by a custom resource's list and watch
// when the clients lack the dynamic one.
var errNoDynamicClient = errors.New("no dynamic client to list custom resources with")

// NewCustomResource returns the resource, for the same reflectors, series
// maps and filters as the built-in ones.
func NewCustomResource(c CustomResource) *Resource {
	expected := &unstructured.Unstructured{}
	expected.SetGroupVersionKind(c.GVR.GroupVersion().WithKind(c.Kind))
	list := func(ctx context.Context, cl Clients, ns string, o metav1.ListOptions) (runtime.Object, error) {
		if cl.Dynamic == nil {
			return nil, errNoDynamicClient
		}
		o.LabelSelector = c.LabelSelector
		return cl.Dynamic.Resource(c.GVR).Namespace(ns).List(ctx, o)
	}
	watchFn := func(ctx context.Context, cl Clients, ns string, o metav1.ListOptions) (watch.Interface, error) {
		if cl.Dynamic == nil {
			return nil, errNoDynamicClient
		}
		o.LabelSelector = c.LabelSelector
		return cl.Dynamic.Resource(c.GVR).Namespace(ns).Watch(ctx, o)
	}
	r := newResource(c.Name, c.Namespaced, expected, list, watchFn,
		func(*unstructured.Unstructured, *Emitter) {}, // no identity labels: the configuration's
		func(FamilyOptions) []Family[*unstructured.Unstructured] { return c.Families() })
	r.gr = c.GVR.GroupResource()
	r.definition = c.Definition
	return r
}

// Definition is what a custom resource's families render (""for the
// built-in resources, whose families the other keys of a group describe).
func (r *Resource) Definition() string { return r.definition }
