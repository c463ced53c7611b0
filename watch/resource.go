package watch

import (
	"context"
	"fmt"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Clients are the API clients a resource may list and watch with.
type Clients struct {
	// Kube is the typed clientset.
	Kube kubernetes.Interface
	// Metadata lists and watches objects as metav1.PartialObjectMetadata
	// only, for resources whose families read nothing but metadata: their
	// specs and data (a Secret's values) never reach the agent.
	Metadata metadata.Interface
	// Dynamic lists and watches custom resources as unstructured objects
	// (NewCustomResource); nil: custom resources cannot be watched.
	Dynamic dynamic.Interface
	// REST is the configuration the clients were made from, for callers
	// that need a plain HTTP client of the API server (the kubelet
	// source's node proxy reads) or its CA; nil for fake clients.
	REST *rest.Config
}

// ListFunc lists one resource in a namespace ("" for all).
type ListFunc func(ctx context.Context, c Clients, namespace string, opts metav1.ListOptions) (runtime.Object, error)

// WatchFunc watches one resource in a namespace ("" for all).
type WatchFunc func(ctx context.Context, c Clients, namespace string, opts metav1.ListOptions) (watch.Interface, error)

// Resource is one kind of Kubernetes object the agent can watch, with the
// metric families rendered from it.
type Resource struct {
	// Name is the resource's name in configuration, as in kube-state-metrics'
	// --resources flag (e.g. "pods").
	Name string
	// Namespaced is true for resources that live in namespaces.
	Namespaced bool
	// gr is the API group and resource that are listed and watched, for
	// RBAC rules.
	gr schema.GroupResource
	// expected is an empty object of the watched type, for the reflector.
	expected runtime.Object
	// list and watch reach the API server.
	list  ListFunc
	watch WatchFunc
	// families returns the family descriptions for the given options.
	families func(FamilyOptions) []FamilyInfo
	// build makes a renderer for the families that select accepts.
	build func(FamilyOptions, func(FamilyInfo) bool) renderFunc
	// definition describes a custom resource's families (Definition).
	definition string
}

// renderFunc renders one object with the emitter and returns its UID.
type renderFunc func(obj any, e *Emitter) (types.UID, error)

// newResource describes a resource whose objects are of type T. identity
// sets the identity labels every series of an object carries.
func newResource[T metav1.Object](
	name string, namespaced bool, expected T,
	list ListFunc, watch WatchFunc,
	identity func(obj T, e *Emitter),
	families func(FamilyOptions) []Family[T],
) *Resource {
	return &Resource{
		Name:       name,
		Namespaced: namespaced,
		gr:         groupResource(name, any(expected).(runtime.Object)),
		expected:   any(expected).(runtime.Object),
		list:       list,
		watch:      watch,
		families: func(o FamilyOptions) []FamilyInfo {
			fs := families(o)
			out := make([]FamilyInfo, len(fs))
			for i, f := range fs {
				out[i] = f.Info()
			}
			return out
		},
		build: func(o FamilyOptions, selected func(FamilyInfo) bool) renderFunc {
			var fs []Family[T]
			seriesLabels := o.SeriesLabels
			for _, f := range families(o) {
				if selected(f.Info()) {
					fs = append(fs, f)
				}
			}
			return func(obj any, e *Emitter) (types.UID, error) {
				o, ok := obj.(T)
				if !ok {
					return "", fmt.Errorf("rendering %s: unexpected object type %T", name, obj)
				}
				identity(o, e)
				e.objectLabels(o.GetLabels(), seriesLabels)
				for i := range fs {
					e.startFamily(i, fs[i].Name, fs[i].IdentityLabels)
					fs[i].Generate(o, e)
				}
				e.endFamilies()
				return o.GetUID(), nil
			}
		},
	}
}

// groupResource returns the group of the typed object expected, from
// client-go's scheme, with the resource name, which in our registry is
// already the plural resource name. Types the scheme does not know (metadata
// and table representations) get an empty GroupResource, which their
// constructor sets instead.
func groupResource(name string, expected runtime.Object) schema.GroupResource {
	gvks, _, err := scheme.Scheme.ObjectKinds(expected)
	if err != nil || len(gvks) == 0 {
		return schema.GroupResource{}
	}
	return schema.GroupResource{Group: gvks[0].Group, Resource: name}
}

// GroupResource is the API group ("" for core) and resource that the agent
// lists and watches for this resource: what an RBAC rule must grant.
func (r *Resource) GroupResource() schema.GroupResource { return r.gr }

// Families describes every family the resource can render with the given
// options, opt-in ones included.
func (r *Resource) Families(o FamilyOptions) []FamilyInfo { return r.families(o) }

// Renderer renders objects of one resource into encode-ready series. It keeps
// scratch space between calls, so it must be used by one goroutine at a time
// (the resource's reflector).
type Renderer struct {
	// resource is the name of the rendered resource, for errors.
	resource string
	// render is the resource's render function over the selected families.
	render renderFunc
	// e is reused between objects.
	e Emitter
	// scratch receives the series before they are copied out exactly sized,
	// by compact, which stores the labels its series share once.
	scratch encode.SeriesSet
	compact encode.Compactor
}

// RenderOptions choose what a Renderer renders.
type RenderOptions struct {
	// Families configures the resource's families.
	Families FamilyOptions
	// Select reports whether a family is rendered; nil selects every family
	// that is not opt-in.
	Select func(FamilyInfo) bool
	// ExternalLabels are added to every series that lacks a label of the
	// same name.
	ExternalLabels []encode.Label
}

// NewRenderer returns a renderer for the resource.
func (r *Resource) NewRenderer(o RenderOptions) *Renderer {
	sel := o.Select
	if sel == nil {
		sel = func(f FamilyInfo) bool { return !f.OptIn }
	}
	rr := &Renderer{resource: r.Name, render: r.build(o.Families, sel)}
	rr.e.b.SetExternal(o.ExternalLabels)
	return rr
}

// Render renders one object. The returned set is a fresh, exactly sized copy
// that the caller owns. A generator that panics on a malformed object does
// not take the agent down: the panic becomes an error naming the object.
func (r *Renderer) Render(obj any) (uid types.UID, set encode.SeriesSet, err error) {
	r.scratch.Reset()
	r.e.out = &r.scratch
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rendering %s %s: panic: %v\n%s", r.resource, objectName(obj), p, debug.Stack())
		}
		r.e.out = nil
		r.e.endFamilies()
	}()
	uid, err = r.render(obj, &r.e)
	if err != nil {
		return "", encode.SeriesSet{}, err
	}
	if uid == "" {
		return "", encode.SeriesSet{}, fmt.Errorf("rendering %s %s: object has no UID", r.resource, objectName(obj))
	}
	return uid, r.compact.Compact(&r.scratch), nil
}

// InvalidSeries returns how many series the renders since the last call
// left out for a generated label name or value no receiver takes, and
// starts counting again.
func (r *Renderer) InvalidSeries() int {
	n := r.e.invalid
	r.e.invalid = 0
	return n
}

// objectName returns namespace/name of a Kubernetes object for messages.
func objectName(obj any) string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Sprintf("(%T)", obj)
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// UIDOf returns the UID of a Kubernetes object, or "" for anything else.
func UIDOf(obj any) types.UID {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetUID()
	}
	return ""
}

// NameOf returns the name of a Kubernetes object, or "" for anything else.
func NameOf(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}
