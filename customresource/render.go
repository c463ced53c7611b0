package customresource

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-state-push/kube-state-push/watch"
)

// renderer renders one family; its scratch space makes it single-goroutine,
// so each watch.Renderer gets its own (watchFamilies).
type renderer struct {
	f *family
	// onErrors, if set, counts the values that did not render.
	onErrors func(n int)
	// base, keys and values are reused between objects.
	base         map[string]string
	keys, values []string
}

// generate renders the family's series of one object, as
// kube-state-metrics' generate does: the family's labels (constant, then
// from paths), the series found under the metric's path sorted by their
// own labels, each completed with the family's labels it lacks. Labels go
// to the emitter in kube-state-metrics' order (its LabelKeys: sorted by
// name), empty values included.
func (r *renderer) generate(u *unstructured.Unstructured, e *watch.Emitter) {
	f := r.f
	obj := u.Object
	if r.base == nil {
		r.base = make(map[string]string, len(f.common)+len(f.fromPath))
	}
	clear(r.base)
	maps.Copy(r.base, f.common)
	addPathLabels(obj, f.fromPath, r.base)
	vs := f.each.values(f.each.path().get(obj))
	if n := f.each.takeErrors(); n > 0 && r.onErrors != nil {
		r.onErrors(n)
	}
	if len(vs) > 1 {
		sortValues(vs)
	}
	for _, v := range vs {
		for k, val := range r.base {
			if _, ok := v.labels[k]; !ok {
				v.labels[k] = val
			}
		}
		r.keys = r.keys[:0]
		for k := range v.labels {
			r.keys = append(r.keys, k)
		}
		slices.Sort(r.keys)
		r.values = r.values[:0]
		for _, k := range r.keys {
			r.values = append(r.values, v.labels[k])
		}
		// Generated label names: EmitKV, as kube_<resource>_labels.
		e.EmitKV(v.value, r.keys, r.values)
	}
}

// watchFamilies returns the families as the watch package renders them,
// each with scratch space of its own.
func watchFamilies(fs []*family, onErrors func(int)) []watch.Family[*unstructured.Unstructured] {
	out := make([]watch.Family[*unstructured.Unstructured], len(fs))
	for i, f := range fs {
		r := &renderer{f: f, onErrors: onErrors}
		out[i] = watch.Family[*unstructured.Unstructured]{
			Name: f.name, Help: f.help, Type: f.typ,
			Generate: r.generate,
		}
	}
	return out
}

// sortValues sorts the series found as kube-state-metrics does
// (compareLabels on their own labels), sorting each one's keys once.
func sortValues(vs []eachValue) {
	type keyed struct {
		keys []string
		ev   eachValue
	}
	ks := make([]keyed, len(vs))
	for i := range vs {
		ks[i] = keyed{keys: sortedKeys(vs[i].labels), ev: vs[i]}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		for i := range min(len(a.keys), len(b.keys)) {
			if c := strings.Compare(a.keys[i], b.keys[i]); c != 0 {
				return c
			}
			if c := strings.Compare(a.ev.labels[a.keys[i]], b.ev.labels[b.keys[i]]); c != 0 {
				return c
			}
		}
		return len(a.keys) - len(b.keys)
	})
	for i := range ks {
		vs[i] = ks[i].ev
	}
}
