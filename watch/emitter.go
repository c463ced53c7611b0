package watch

import (
	"unicode/utf8"

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
	// name is the family being rendered (startFamily).
	name string
	// ident holds the object's identity labels as name, value pairs.
	ident []string
	// identN, when positive, is how many identity labels the family being
	// rendered carries (Family.IdentityLabels).
	identN int
	// obj holds the object's own labels every series carries
	// (series_labels_from_object, objectlabels.go), as name, value pairs;
	// objOn is set when the resource has such labels configured, even if
	// the object lacks them.
	obj   []string
	objOn bool
	// enums caches the interned refs of enumeration labels (enumLabels),
	// so that rendering looks them up without the table's lock.
	enums map[encode.Label]uint32
	// fams keeps, by the family's place in its resource's list, what
	// begin and shaped would otherwise look up again for every family of
	// every object (the interned name under the table's lock, the layout
	// in a sync.Map): fam is the family being rendered's (startFamily).
	fams []familyCache
	fam  *familyCache
	// invalid counts the series left out because a generated label name
	// or value is one no receiver takes (EmitKV).
	invalid int
}

// familyCache is what an Emitter keeps of one family between objects.
type familyCache struct {
	name string
	// ref is the interned __name__ label, valid when interned is set.
	ref      uint32
	interned bool
	// layout is the family's text layout, once learnt.
	layout *encode.Layout
}

// startFamily says the series that follow are family i of the resource's
// list, named name, with identN identity labels (Family.IdentityLabels).
func (e *Emitter) startFamily(i int, name string, identN int) {
	if i >= len(e.fams) {
		e.fams = append(e.fams, make([]familyCache, i+1-len(e.fams))...)
	}
	if e.fams[i].name != name {
		e.fams[i] = familyCache{name: name}
	}
	e.fam = &e.fams[i]
	e.name, e.identN = name, identN
}

// endFamilies ends a resource's render function.
func (e *Emitter) endFamilies() { e.fam, e.identN = nil, 0 }

// enumLabels are the label names whose values come from a small vocabulary
// (Kubernetes' enumerations and the families' own): the same few values on
// the series of every object, so they are interned (encode.InternCapped)
// rather than stored with each series.
var enumLabels = map[string]bool{
	"phase": true, "qos_class": true, "condition": true, "status": true,
	"type": true, "resource": true, "unit": true, "reason": true,
	"created_by_kind": true, "owner_kind": true, "owner_is_controller": true,
	"host_network": true, "ip_family": true, "effect": true, "operator": true,
	"key": true, "access_mode": true, "service_type": true, "protocol": true,
	"ready": true, "port_protocol": true, "mode": true, "policy": true,
	"priority_class": true,
}

// add adds a family's own label, interned if it is an enumeration.
func (e *Emitter) add(name, value string) {
	if value == "" || !enumLabels[name] {
		e.b.Add(name, value)
		return
	}
	l := encode.Label{Name: name, Value: value}
	ref, ok := e.enums[l]
	if !ok {
		if ref, ok = encode.InternCapped(name, value); !ok {
			e.b.Add(name, value)
			return
		}
		if e.enums == nil {
			e.enums = make(map[encode.Label]uint32)
		}
		e.enums[l] = ref
	}
	e.b.AddInterned(name, value, ref)
}

// Emit adds one series with the given value. kv holds the family's own labels
// as name, value pairs; labels with empty values are left out, as Prometheus
// does (the text exposition format keeps them, see shaped).
func (e *Emitter) Emit(value float64, kv ...string) {
	e.begin()
	for i := 0; i+1 < len(kv); i += 2 {
		e.add(kv[i], kv[i+1])
	}
	e.b.AppendTo(e.out, value)
	e.shaped(kv, nil, nil, false)
}

// EmitKV adds one series whose labels come as parallel name and value slices
// (for families with generated label names, such as kube_pod_labels).
// Labels in kv come first, then keys/values.
//
// A generated name comes from an object (a custom resource's map keys): one
// that is not a valid label name in the legacy scheme, or a value that is
// not valid UTF-8, would make receivers refuse the series (and Prometheus'
// text format the whole page), so the series is left out and counted
// (InvalidSeries). Names the agent writes itself are valid by construction
// and not checked.
func (e *Emitter) EmitKV(value float64, keys, values []string, kv ...string) {
	for i := range keys {
		if !validLabelName(keys[i]) || !utf8.ValidString(values[i]) {
			e.invalid++
			return
		}
	}
	if len(e.obj) > 0 {
		keys, values = e.withoutObjectLabels(keys, values)
	}
	e.begin()
	for i := 0; i+1 < len(kv); i += 2 {
		e.add(kv[i], kv[i+1])
	}
	for i := range keys {
		e.b.Add(keys[i], values[i])
	}
	e.b.AppendTo(e.out, value)
	e.shaped(kv, keys, values, true)
}

// shaped keeps what the text exposition format needs of the series just
// appended: its labels in emission order with empty values kept. The
// family's layout (layout.go) gives both for free when the series was
// emitted with the same names as the family's first and its generated
// labels come back from the encoded ones (in name order, no empty value);
// otherwise the series gets an exposition trailer with its labels as
// emitted (encode.SeriesSet.AppendTrailer).
func (e *Emitter) shaped(kv, keys, values []string, generated bool) {
	// The object's labels are written as generated labels are, after the
	// others in name order, so that objects with and without them share
	// the family's layout.
	generated = generated || e.objOn
	n := e.identCount()
	f := e.fam
	if f.layout == nil {
		f.layout = layoutFor(e.name, e.ident, n, kv, generated)
	}
	if fits(f.layout, e.ident, n, kv, generated) && !encode.NeedsTrailer(keys, values) {
		return
	}
	for i := 0; i+1 < n; i += 2 {
		e.out.AppendTrailer(e.ident[i], e.ident[i+1])
	}
	for i := 0; i+1 < len(kv); i += 2 {
		e.out.AppendTrailer(kv[i], kv[i+1])
	}
	for i := 0; i+1 < len(e.obj); i += 2 {
		e.out.AppendTrailer(e.obj[i], e.obj[i+1])
	}
	for i := range keys {
		e.out.AppendTrailer(keys[i], values[i])
	}
}

// identCount is how many entries of ident (names and values) the family
// being rendered carries.
func (e *Emitter) identCount() int {
	n := len(e.ident)
	if e.identN > 0 {
		n = min(n, 2*e.identN)
	}
	return n
}

func (e *Emitter) begin() {
	e.b.Reset()
	f := e.fam
	if !f.interned {
		f.ref, f.interned = encode.Intern(encode.MetricName, e.name), true
	}
	e.b.AddInterned(encode.MetricName, e.name, f.ref)
	n := e.identCount()
	for i := 0; i+1 < n; i += 2 {
		e.b.Add(e.ident[i], e.ident[i+1])
	}
	for i := 0; i+1 < len(e.obj); i += 2 {
		e.b.Add(e.obj[i], e.obj[i+1])
	}
}

// Identity sets the object's identity labels, added to every series. The
// resource's identity function calls it once per object.
func (e *Emitter) Identity(kv ...string) {
	e.ident = append(e.ident[:0], kv...)
}

// validLabelName reports whether name is a label name in the legacy scheme,
// [a-zA-Z_][a-zA-Z0-9_]*, the one the agent's names follow (as
// kube-state-metrics' do) and write relabeling checks. An empty name is
// valid here: the encoder leaves the label out.
func validLabelName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !labelNameByte(c) || i == 0 && '0' <= c && c <= '9' {
			return false
		}
	}
	return true
}
