package encode

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// MetricName is the label that holds a series' metric name.
const MetricName = "__name__"

// labelSep separates names and values when hashing a label set, so that
// {a="bc"} and {ab="c"} hash differently.
var labelSep = []byte{0xff}

// Label is one name/value pair of a series.
type Label struct {
	Name, Value string
}

// LabelsBuilder collects the labels of one series at a time and appends them,
// sorted and unique, to a SeriesSet. It keeps its scratch space between
// series, so rendering many series allocates only when a set's buffer grows.
// The zero value is ready to use; a LabelsBuilder is not safe for concurrent
// use.
//
// A label added with AddInterned is written as a reference (see refs.go)
// instead of its bytes; the hash and the order are those of the label
// itself, so a series' identity does not depend on how it is stored.
type LabelsBuilder struct {
	// labels is the scratch list of the series being built.
	labels []entry
	// external are appended to every series unless the series already has a
	// label of that name (as Prometheus does with external_labels); they are
	// interned, being the same on every series.
	external []entry
	// hashed is scratch space for the bytes a series' hash is taken over.
	hashed []byte
}

// entry is one label of the series being built and how it is written.
type entry struct {
	Label
	// kind is literal or refInterned; ref is the interned index.
	kind byte
	ref  uint32
}

// literal marks an entry written as its own bytes.
const literal = 0

// SetExternal sets labels that every following series carries unless it has
// a label of the same name already.
func (b *LabelsBuilder) SetExternal(ls []Label) {
	b.external = b.external[:0]
	for _, l := range ls {
		if l.Name == "" || l.Value == "" {
			continue
		}
		b.external = append(b.external, entry{Label: l, kind: refInterned, ref: Intern(l.Name, l.Value)})
	}
}

// Reset starts a new series.
func (b *LabelsBuilder) Reset() { b.labels = b.labels[:0] }

// Add adds a label to the series being built. A label with an empty value is
// the same as no label in Prometheus' data model (and Remote-Write forbids
// sending one), so it is left out.
func (b *LabelsBuilder) Add(name, value string) {
	if value == "" || name == "" {
		return
	}
	b.labels = append(b.labels, entry{Label: Label{Name: name, Value: value}})
}

// AddInterned adds a label that Intern(name, value) returned ref for; the
// series refers to the process's copy instead of repeating it.
func (b *LabelsBuilder) AddInterned(name, value string, ref uint32) {
	if value == "" || name == "" {
		return
	}
	b.labels = append(b.labels, entry{Label: Label{Name: name, Value: value}, kind: refInterned, ref: ref})
}

// AppendTo sorts the labels, drops repeated names (the first added wins),
// adds the external labels, and appends the series with the given value to
// set.
func (b *LabelsBuilder) AppendTo(set *SeriesSet, value float64) {
	ls := b.labels
	for _, e := range b.external {
		if !hasName(ls, e.Name) {
			ls = append(ls, e)
		}
	}
	b.labels = ls
	sortEntries(ls)

	// The hash is xxhash over name, 0xff, value, 0xff of each label in
	// turn (HashLabels), taken over the whole run at once: a Digest written
	// four times a label was an eighth of BenchmarkRenderPod.
	h := b.hashed[:0]
	off := len(set.Buf)
	prev := ""
	for i, l := range ls {
		if i > 0 && l.Name == prev {
			continue
		}
		prev = l.Name
		if l.kind == literal {
			set.Buf = appendLabel(set.Buf, l.Label)
		} else {
			set.Buf = appendRef(set.Buf, l.kind, uint64(l.ref))
		}
		h = append(append(append(append(h, l.Name...), labelSep...), l.Value...), labelSep...)
	}
	b.hashed = h
	set.Refs = append(set.Refs, Ref{
		Off:   uint32(off),
		Len:   uint32(len(set.Buf) - off),
		Hash:  xxhash.Sum64(h),
		Value: value,
	})
}

// sortEntries sorts ls by name, stably, so that among repeated names the
// first added stays first. A series has a handful of labels, mostly added
// nearly in order, which an insertion sort moves least; a long list (a
// label family's) goes to the library's sort.
func sortEntries(ls []entry) {
	if len(ls) > 16 {
		slices.SortStableFunc(ls, func(x, y entry) int { return strings.Compare(x.Name, y.Name) })
		return
	}
	for i := 1; i < len(ls); i++ {
		if ls[i].Name >= ls[i-1].Name {
			continue
		}
		e := ls[i]
		j := i
		for ; j > 0 && e.Name < ls[j-1].Name; j-- {
			ls[j] = ls[j-1]
		}
		ls[j] = e
	}
}

func hasName(ls []entry, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// appendLabel appends one element of TimeSeries.labels (field 1): the tag,
// the length, and the prompb.Label message itself, as prompb marshals it
// (name as field 1, value as field 2, an empty string left out).
func appendLabel(buf []byte, l Label) []byte {
	n := stringFieldLen(l.Name) + stringFieldLen(l.Value)
	buf = appendVarint(append(buf, tagTimeSeriesLabels), uint64(n))
	buf = appendStringField(buf, tagLabelName, l.Name)
	return appendStringField(buf, tagLabelValue, l.Value)
}

// stringFieldLen is the encoded length of a proto3 string field holding s
// (0 for an empty one, which is left out).
func stringFieldLen(s string) int {
	if s == "" {
		return 0
	}
	return 1 + varintLen(uint64(len(s))) + len(s)
}

// appendStringField appends the proto3 string field tag holding s; nothing
// for an empty s.
func appendStringField(buf []byte, tag byte, s string) []byte {
	if s == "" {
		return buf
	}
	return append(appendVarint(append(buf, tag), uint64(len(s))), s...)
}

// NextLabel splits the first label off encoded labels (a run of
// TimeSeries.labels elements, each a tag, a length and a prompb.Label with
// the name as field 1 and the value as field 2, as LabelsBuilder writes
// them, or references to such elements, which it follows: see refs.go). ok
// is false at the end of b and for bytes that do not parse: another tag, a
// truncated length, a field of the label other than those two, or a
// reference out of range. The slices alias b or the referenced bytes.
func NextLabel(b []byte) (name, value, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, nil, false
	}
	if b[0] != tagTimeSeriesLabels {
		elem, n := resolve(b, nil)
		if n == 0 {
			return nil, nil, nil, false
		}
		name, value, _, ok = NextLabel(elem)
		return name, value, b[n:], ok
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n > uint64(len(b)-1-k) {
		return nil, nil, nil, false
	}
	label := b[1+k : 1+k+int(n)]
	rest = b[1+k+int(n):]
	for len(label) > 0 {
		tag := label[0]
		m, j := binary.Uvarint(label[1:])
		if j <= 0 || m > uint64(len(label)-1-j) {
			return nil, nil, nil, false
		}
		field := label[1+j : 1+j+int(m)]
		label = label[1+j+int(m):]
		switch tag {
		case tagLabelName:
			name = field
		case tagLabelValue:
			value = field
		default:
			return nil, nil, nil, false
		}
	}
	return name, value, rest, true
}

// HashLabels is LabelsBuilder's hash of a series (xxhash of each name and
// value, each followed by 0xff) computed from its encoded labels; ok is
// false for bytes NextLabel does not parse.
func HashLabels(b []byte) (uint64, bool) {
	var d xxhash.Digest
	d.Reset()
	for len(b) > 0 {
		name, value, rest, ok := NextLabel(b)
		if !ok {
			return 0, false
		}
		_, _ = d.Write(name)
		_, _ = d.Write(labelSep)
		_, _ = d.Write(value)
		_, _ = d.Write(labelSep)
		b = rest
	}
	return d.Sum64(), true
}
