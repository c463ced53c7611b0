package encode

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// Layout is how a family's series are written in the Prometheus text
// exposition format, as kube-state-metrics writes them: its labels in the
// order its generators list them, and every one of them on every series,
// with "" where the value is empty. The encoded labels of a SeriesSet are
// sorted and leave empty values out (Remote-Write wants both), so the text
// form takes the order back from here; a series the layout does not
// describe carries an exposition trailer instead (AppendTrailer).
type Layout struct {
	// Keys are the family's label names in the order they are written
	// (identity labels such as namespace, pod and uid first); __name__ is
	// not among them. A series without a value for one is written with "".
	Keys []string
	// Generated is set when series also carry labels named after the
	// object's data (label_*, annotation_*, nodeselector_*...): written
	// after Keys, in name order.
	Generated bool
	// byName lists the indexes of Keys in name order (NewLayout), to find
	// the keys among a series' sorted labels in one pass.
	byName []int
}

// NewLayout returns the layout of a family whose labels are keys, in the
// order they are written.
func NewLayout(keys []string, generated bool) *Layout {
	l := &Layout{Keys: keys, Generated: generated}
	l.byName = keyOrder(make([]int, 0, len(keys)), keys)
	return l
}

// keyOrder appends to dst the indexes of keys in name order.
func keyOrder(dst []int, keys []string) []int {
	for i := range keys {
		dst = append(dst, i)
	}
	slices.SortStableFunc(dst, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	return dst
}

// AppendTrailer adds one label to the exposition trailer of the last
// series appended to s: the series' labels as the text format writes them,
// in order and with empty values kept, for a series its family's Layout
// does not describe. The series' labels (Labels) do not include the
// trailer, so only the text format reads it.
func (s *SeriesSet) AppendTrailer(name, value string) {
	s.Buf = appendLabel(s.Buf, Label{Name: name, Value: value})
}

// NeedsTrailer reports whether generated labels, given in exposition order,
// differ from what their encoded form gives back: an empty value, or names
// out of order.
func NeedsTrailer(names, values []string) bool {
	for i := range names {
		if values[i] == "" || (i > 0 && names[i] <= names[i-1]) {
			return true
		}
	}
	return false
}

// Trailer returns the exposition trailer of series i (AppendTrailer), or
// nil. The slice aliases the set's buffer.
func (s *SeriesSet) Trailer(i int) []byte {
	r := s.Refs[i]
	end := uint32(len(s.Buf)) - s.Shared
	if i+1 < len(s.Refs) && s.Refs[i+1].Off >= r.Off+r.Len {
		end = s.Refs[i+1].Off
	}
	if start := r.Off + r.Len; start < end {
		return s.Buf[start:end:end]
	}
	return nil
}

// rawLabel is one decoded label; both slices alias the encoded bytes.
type rawLabel struct {
	name, value []byte
	// used marks a label already written as one of a layout's keys.
	used bool
}

// TextWriter writes series in the text exposition format. It keeps scratch
// space between series, so writing allocates only when dst grows; it is not
// safe for concurrent use.
type TextWriter struct {
	labels []rawLabel
	// values holds, by index in the layout's Keys, the series' value of
	// each key; order is the layout's byName when it has none.
	values [][]byte
	order  []int
}

// MetricNameOf returns the value of the __name__ label of encoded labels, or
// nil. It does not allocate.
func MetricNameOf(labels []byte) []byte {
	for b := labels; ; {
		name, value, rest, ok := NextLabel(b)
		if !ok {
			return nil
		}
		if string(name) == MetricName {
			return value
		}
		b = rest
	}
}

// AppendSeries appends one line: the metric name, the labels, and the
// value. labels are the series' encoded labels and trailer its exposition
// trailer (nil if none). With a trailer, its labels are written as they
// are; otherwise l.Keys in that order, then (l.Generated) the other labels
// in name order, but for skip: labels added to every series that are not
// the series' own (external labels).
func (w *TextWriter) AppendSeries(dst []byte, name string, l *Layout, labels, trailer []byte, skip []Label, value float64) []byte {
	dst = append(dst, name...)
	sep := byte('{')
	label := func(n, v []byte) {
		dst = append(dst, sep)
		sep = ','
		dst = append(dst, n...)
		dst = append(dst, '=', '"')
		dst = appendEscaped(dst, v)
		dst = append(dst, '"')
	}
	if trailer != nil {
		w.labels = decodeRaw(w.labels[:0], trailer)
		for i := range w.labels {
			label(w.labels[i].name, w.labels[i].value)
		}
	} else {
		w.labels = decodeRaw(w.labels[:0], labels)
		order := l.byName
		if len(order) != len(l.Keys) {
			w.order = keyOrder(w.order[:0], l.Keys)
			order = w.order
		}
		// Both the labels and the keys in name order: one merge finds
		// each key's value.
		w.values = slices.Grow(w.values[:0], len(l.Keys))[:len(l.Keys)]
		clear(w.values)
		for i, j := 0, 0; i < len(w.labels) && j < len(order); {
			lb := &w.labels[i]
			switch c := bytes.Compare(lb.name, unsafeBytes(l.Keys[order[j]])); {
			case c < 0:
				i++
			case c > 0:
				j++
			default:
				lb.used = true
				w.values[order[j]] = lb.value
				i++
				j++
			}
		}
		for k, name := range l.Keys {
			label(unsafeBytes(name), w.values[k])
		}
		if l.Generated {
			for i := range w.labels {
				lb := &w.labels[i]
				if !lb.used && string(lb.name) != MetricName && !isSkipped(skip, lb) {
					label(lb.name, lb.value)
				}
			}
		}
	}
	if sep == ',' {
		dst = append(dst, '}')
	}
	dst = append(dst, ' ')
	dst = AppendTextValue(dst, value)
	return append(dst, '\n')
}

func isSkipped(skip []Label, lb *rawLabel) bool {
	for _, s := range skip {
		if s.Name == string(lb.name) && s.Value == string(lb.value) {
			return true
		}
	}
	return false
}

// decodeRaw appends the labels of b to out.
func decodeRaw(out []rawLabel, b []byte) []rawLabel {
	for {
		name, value, rest, ok := NextLabel(b)
		if !ok {
			return out
		}
		out = append(out, rawLabel{name: name, value: value})
		b = rest
	}
}

// appendEscaped appends a label value escaped as the text format wants:
// backslash, newline and double quote.
func appendEscaped(dst, v []byte) []byte { return escape(dst, v, true) }

// AppendHeader appends a family's HELP and TYPE lines. The help is escaped
// as the text format wants a HELP line: backslash and newline (a double
// quote stays).
func AppendHeader(dst []byte, name, help, typ string) []byte {
	dst = append(dst, "# HELP "...)
	dst = append(dst, name...)
	dst = append(dst, ' ')
	dst = escape(dst, unsafeBytes(help), false)
	dst = append(dst, "\n# TYPE "...)
	dst = append(dst, name...)
	dst = append(dst, ' ')
	dst = append(dst, typ...)
	return append(dst, '\n')
}

// escape appends v with backslash and newline escaped, and with quotes
// double quotes too; runs without either are copied whole.
func escape(dst, v []byte, quotes bool) []byte {
	special := func(c byte) bool { return c == '\\' || c == '\n' || (quotes && c == '"') }
	i := 0
	for i < len(v) && !special(v[i]) {
		i++
	}
	dst = append(dst, v[:i]...)
	for _, c := range v[i:] {
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case quotes && c == '"':
			dst = append(dst, '\\', '"')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// AppendTextValue appends a sample value as kube-state-metrics writes it:
// 0, 1 and -1 as integers, NaN and ±Inf by name, everything else in Go's
// shortest 'g' form.
func AppendTextValue(dst []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(dst, '1')
	case f == 0:
		return append(dst, '0')
	case f == -1:
		return append(dst, '-', '1')
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// unsafeBytes views a string as bytes, which the caller only reads.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
