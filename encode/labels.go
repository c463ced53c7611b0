package encode

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/prompb"
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
type LabelsBuilder struct {
	// labels is the scratch list of the series being built.
	labels []Label
	// external are appended to every series unless the series already has a
	// label of that name (as Prometheus does with external_labels).
	external []Label
}

// SetExternal sets labels that every following series carries unless it has
// a label of the same name already.
func (b *LabelsBuilder) SetExternal(ls []Label) {
	b.external = append(b.external[:0], ls...)
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
	b.labels = append(b.labels, Label{Name: name, Value: value})
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
	// Stable, so that among repeated names the first added stays first.
	slices.SortStableFunc(ls, func(x, y Label) int { return strings.Compare(x.Name, y.Name) })

	var d xxhash.Digest
	d.Reset()
	off := len(set.Buf)
	prev := ""
	for i, l := range ls {
		if i > 0 && l.Name == prev {
			continue
		}
		prev = l.Name
		set.Buf = appendLabel(set.Buf, l)
		_, _ = d.WriteString(l.Name)
		_, _ = d.Write(labelSep)
		_, _ = d.WriteString(l.Value)
		_, _ = d.Write(labelSep)
	}
	set.Refs = append(set.Refs, Ref{
		Off:   uint32(off),
		Len:   uint32(len(set.Buf) - off),
		Hash:  d.Sum64(),
		Value: value,
	})
}

func hasName(ls []Label, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// appendLabel appends one element of TimeSeries.labels (field 1): the tag,
// the length, and the prompb.Label message itself.
func appendLabel(buf []byte, l Label) []byte {
	pl := prompb.Label{Name: l.Name, Value: l.Value}
	n := pl.Size()
	buf = append(buf, tagTimeSeriesLabels)
	buf = appendVarint(buf, uint64(n))
	start := len(buf)
	buf = slices.Grow(buf, n)[:start+n]
	if _, err := pl.MarshalToSizedBuffer(buf[start:]); err != nil {
		// Size() was computed from the same message: a failure is a bug.
		panic("encode: marshalling prompb.Label: " + err.Error())
	}
	return buf
}

// NextLabel splits the first label off encoded labels (a run of
// TimeSeries.labels elements, each a tag, a length and a prompb.Label with
// the name as field 1 and the value as field 2, as LabelsBuilder writes
// them). ok is false at the end of b and for bytes that do not parse: another
// tag, a truncated length, or a field of the label other than those two.
// The slices alias b.
func NextLabel(b []byte) (name, value, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != tagTimeSeriesLabels {
		return nil, nil, nil, false
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
