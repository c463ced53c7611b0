package customresource

import (
	"slices"

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
	base         labelSet
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
	r.base = append(r.base[:0], f.common...)
	addPathLabels(obj, f.fromPath, &r.base)
	vs := f.each.values(f.each.path().get(obj))
	if n := f.each.takeErrors(); n > 0 && r.onErrors != nil {
		r.onErrors(n)
	}
	if len(vs) > 1 {
		slices.SortFunc(vs, func(a, b eachValue) int { return compareLabelSets(a.labels, b.labels) })
	}
	for _, v := range vs {
		// The series' labels, then the family's it lacks: both sorted, so
		// merged in order.
		r.keys, r.values = r.keys[:0], r.values[:0]
		own, base := v.labels, r.base
		for len(own) > 0 || len(base) > 0 {
			switch {
			case len(base) == 0 || len(own) > 0 && own[0].name < base[0].name:
				r.keys, r.values = append(r.keys, own[0].name), append(r.values, own[0].value)
				own = own[1:]
			case len(own) == 0 || base[0].name < own[0].name:
				r.keys, r.values = append(r.keys, base[0].name), append(r.values, base[0].value)
				base = base[1:]
			default: // the series' own wins
				r.keys, r.values = append(r.keys, own[0].name), append(r.values, own[0].value)
				own, base = own[1:], base[1:]
			}
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
