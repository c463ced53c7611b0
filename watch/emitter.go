package watch

import (
	"github.com/kube-state-push/kube-state-push/encode"
)

// Emitter receives the series a family renders for one object. It adds the
// family's name and the object's identity labels (namespace, pod, uid, ...)
// to every series, so generators pass only their own labels.
type Emitter struct {
	// b builds each series' encoded labels.
	b encode.LabelsBuilder
	// out receives the rendered series.
	out *encode.SeriesSet
	// name is the family being rendered.
	name string
	// ident holds the object's identity labels as name, value pairs.
	ident []string
	// identN, when positive, is how many identity labels the family being
	// rendered carries (Family.IdentityLabels).
	identN int
}

// Emit adds one series with the given value. kv holds the family's own labels
// as name, value pairs; labels with empty values are left out, as Prometheus
// does.
func (e *Emitter) Emit(value float64, kv ...string) {
	e.begin()
	for i := 0; i+1 < len(kv); i += 2 {
		e.b.Add(kv[i], kv[i+1])
	}
	e.b.AppendTo(e.out, value)
}

// EmitKV adds one series whose labels come as parallel name and value slices
// (for families with generated label names, such as kube_pod_labels).
// Labels in kv come first, then keys/values.
func (e *Emitter) EmitKV(value float64, keys, values []string, kv ...string) {
	e.begin()
	for i := 0; i+1 < len(kv); i += 2 {
		e.b.Add(kv[i], kv[i+1])
	}
	for i := range keys {
		e.b.Add(keys[i], values[i])
	}
	e.b.AppendTo(e.out, value)
}

func (e *Emitter) begin() {
	e.b.Reset()
	e.b.Add(encode.MetricName, e.name)
	n := len(e.ident)
	if e.identN > 0 {
		n = min(n, 2*e.identN)
	}
	for i := 0; i+1 < n; i += 2 {
		e.b.Add(e.ident[i], e.ident[i+1])
	}
}

// Identity sets the object's identity labels, added to every series. The
// resource's identity function calls it once per object.
func (e *Emitter) Identity(kv ...string) {
	e.ident = append(e.ident[:0], kv...)
}
