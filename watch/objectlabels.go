package watch

import "slices"

// series_labels_from_object puts chosen Kubernetes labels of an object on
// every series of the object, so that a query filters by team or app
// without joining kube_<resource>_labels. It costs no series: the labels
// are the object's, so each series keeps its identity, and a label whose
// value changes ends the object's series (staleness markers) and starts
// new ones in the same snapshot, as any change of a series' labels does.
// In the text format they follow the series' other labels, in name
// order, as kube_<resource>_labels' own do.

// objectLabels sets the labels of the object that keys name, as kube_<resource>_labels names them with the same keys in
// its allowlist (sanitised, snake_cased, conflicts suffixed). A key the
// object lacks adds nothing.
func (e *Emitter) objectLabels(kube map[string]string, keys []string) {
	e.obj, e.objOn = e.obj[:0], len(keys) > 0
	if len(keys) == 0 || len(kube) == 0 {
		return
	}
	names, values := allowedLabels("label", kube, keys)
	for i := range names {
		e.obj = append(e.obj, names[i], values[i])
	}
}

// withoutObjectLabels returns keys and values without the labels the
// object's series already carry from objectLabels: kube_<resource>_labels
// may export the same, and a series holds each name once. It copies only
// when there is one to leave out.
func (e *Emitter) withoutObjectLabels(keys, values []string) ([]string, []string) {
	own := e.obj
	has := func(name string) bool {
		for i := 0; i < len(own); i += 2 {
			if own[i] == name {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(keys, has) {
		return keys, values
	}
	var k, v []string
	for i := range keys {
		if !has(keys[i]) {
			k, v = append(k, keys[i]), append(v, values[i])
		}
	}
	return k, v
}
