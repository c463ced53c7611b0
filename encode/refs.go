package encode

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
)

// A series' encoded labels are TimeSeries.labels elements, as Remote-Write
// 1.0 sends them, but a label that many series carry is stored once and
// referred to, so that the series map keeps a few bytes per series instead
// of the whole label set:
//
//   - an interned reference: a label element of the process's interned
//     table (Intern): family names (__name__), external labels and
//     enumeration values, the same on the series of every object;
//   - a shared reference: a label element in the shared region at the end
//     of the series' SeriesSet buffer, that many bytes before its end: a
//     label that several series of one object carry, such as its identity
//     labels (namespace, pod, uid...) or a container's name (Compactor).
//
// A reference takes two bytes, its first byte's high bits saying which
// kind (refInterned2: 1, then a 15-bit index; refShared2: 01, then a 14-bit
// distance), or, for an index or distance past those, refInterned or
// refShared and a uvarint. A label element starts with 0x0a, which is
// neither.
//
// A reference sits where its label sorts, so labels stay in name order.
// A series' labels slice (SeriesSet.Labels) ends its capacity at the end of
// the set's buffer, which is how a shared reference finds the region:
// slicing it forward keeps that, copying it does not, so bytes that leave a
// set are expanded first (AppendLabels). Readers walk labels with
// NextLabel, which follows references, and the encoders write them
// expanded: the wire format never sees a reference.
const (
	refInterned = 0x01
	refShared   = 0x02
	// refInterned2 and refShared2 are the two-byte forms' first bits.
	refInterned2 = 0x80
	refShared2   = 0x40
	// maxInterned2 and maxShared2 bound what the two-byte forms hold.
	maxInterned2 = 1 << 15
	maxShared2   = 1 << 14
	// wideCopy is the longest element appendExpanded copies with
	// fixed-size stores.
	wideCopy = 64
)

// isRef reports whether a label byte string starting with tag starts with
// a reference.
func isRef(tag byte) bool {
	return tag >= refShared2 || tag == refInterned || tag == refShared
}

// ref2 decodes the two-byte reference whose bytes are t (t >= refShared2)
// and b: its kind (refInterned or refShared) and index or distance.
func ref2(t, b byte) (kind byte, v uint64) {
	if t >= refInterned2 {
		return refInterned, interned2(t, b)
	}
	return refShared, shared2(t, b)
}

// interned2 and shared2 are ref2's index and distance for a t known to be
// of that kind.
func interned2(t, b byte) uint64 { return uint64(t&^refInterned2)<<8 | uint64(b) }
func shared2(t, b byte) uint64   { return uint64(t&^refShared2)<<8 | uint64(b) }

// appendRef appends a reference of kind refInterned or refShared to v, in
// two bytes when v fits them.
func appendRef(dst []byte, kind byte, v uint64) []byte {
	switch {
	case kind == refInterned && v < maxInterned2:
		return append(dst, refInterned2|byte(v>>8), byte(v))
	case kind == refShared && v < maxShared2:
		return append(dst, refShared2|byte(v>>8), byte(v))
	}
	return appendVarint(append(dst, kind), v)
}

// internTable holds the interned label elements. Entries are only added,
// never changed, so a reader loads the slice once and indexes it without a
// lock; the table grows with the distinct family names and external labels
// the process ever renders, which its code and configuration bound.
type internTable struct {
	mu    sync.Mutex
	index map[Label]uint32
	// byElem maps each entry's label element to its index, for bytes
	// read back (internLiteral).
	byElem map[string]uint32
	elems  atomic.Pointer[[][]byte]
}

var interned = internTable{index: make(map[Label]uint32), byElem: make(map[string]uint32)}

// internCap bounds the table for InternCapped: labels whose values come
// from the cluster's data could otherwise grow it for the life of the
// process. Past it, such labels are written in full, which is only bigger.
var internCap = 1 << 16

// InternCapped is Intern for a label whose values come from the cluster
// (a pod's phase, a condition's status): ok is false once the table holds
// internCap labels and this one is not among them.
func InternCapped(name, value string) (ref uint32, ok bool) {
	return interned.add(Label{Name: name, Value: value}, internCap)
}

// Intern returns the index of the label element for name and value in the
// process's interned table, adding it if new (LabelsBuilder.AddInterned).
// Safe for concurrent use.
func Intern(name, value string) uint32 {
	i, _ := interned.add(Label{Name: name, Value: value}, math.MaxInt)
	return i
}

// add returns l's index, adding it unless the table holds limit labels.
func (t *internTable) add(l Label, limit int) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index[l]; ok {
		return i, true
	}
	if len(t.index) >= limit {
		return 0, false
	}
	var cur [][]byte
	if p := t.elems.Load(); p != nil {
		cur = *p
	}
	// A new slice each time: readers may hold the old one.
	// Its capacity is at least wideCopy, for appendExpanded's stores.
	elem := appendLabel(make([]byte, 0, wideCopy), l)
	next := append(cur[:len(cur):len(cur)], elem)
	t.elems.Store(&next)
	i := uint32(len(next) - 1)
	t.index[l] = i
	t.byElem[string(elem)] = i
	return i, true
}

// internLiteral returns the index of the interned label whose element is
// elem, a literal label element: found by its bytes, which allocates
// nothing, or, for a family name (__name__) not there yet, added within
// InternCapped's cap. Labels come back literal from a disk buffer; those
// the renderers intern (family names, external labels, enumeration
// values) take two bytes again this way.
func internLiteral(elem []byte) (uint32, bool) {
	t := &interned
	t.mu.Lock()
	i, ok := t.byElem[string(elem)]
	t.mu.Unlock()
	if ok {
		return i, true
	}
	name, value, _, ok := NextLabel(elem)
	if !ok || string(name) != MetricName {
		return 0, false
	}
	return t.add(Label{Name: MetricName, Value: string(value)}, internCap)
}

// internedElems returns the interned table as it is now, for a caller that
// resolves many references: entries already referred to never change.
func internedElems() [][]byte {
	if p := interned.elems.Load(); p != nil {
		return *p
	}
	return nil
}

// resolve returns the label element the reference at the start of b refers
// to, and the reference's length; n is 0 for a bad reference. table is the
// interned table as the caller loaded it (internedElems), loaded again for
// an index past its end.
func resolve(b []byte, table [][]byte) (elem []byte, n int) {
	if len(b) < 2 {
		return nil, 0
	}
	var kind byte
	var v uint64
	if b[0] >= refShared2 {
		kind, v = ref2(b[0], b[1])
		n = 2
	} else {
		// The long form (appendRef writes it only past the two-byte
		// forms' bounds): the tag, then a uvarint.
		var k int
		if v, k = binary.Uvarint(b[1:]); k <= 0 {
			return nil, 0
		}
		kind, n = b[0], 1+k
	}
	switch kind {
	case refInterned:
		if v >= uint64(len(table)) {
			if table = internedElems(); v >= uint64(len(table)) {
				return nil, 0
			}
		}
		return table[v], n
	case refShared:
		c := uint64(cap(b))
		if v == 0 || v > c {
			return nil, 0
		}
		elem = b[:c][c-v:]
		l := elemLen(elem)
		if l == 0 {
			return nil, 0
		}
		return elem[:l], n
	}
	return nil, 0
}

// nextElem is the length of the label element or reference at the start of
// b, and whether it is a literal element; n is 0 for bytes that are
// neither (resolve's table).
func nextElem(b []byte, table [][]byte) (n int, literal bool) {
	if l := elemLen(b); l != 0 {
		return l, true
	}
	_, n = resolve(b, table)
	return n, false
}

// elemLen is the length of the literal label element at the start of b, 0
// if there is none.
func elemLen(b []byte) int {
	if len(b) < 2 || b[0] != tagTimeSeriesLabels {
		return 0
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n > uint64(len(b)-1-k) {
		return 0
	}
	return 1 + k + int(n)
}

// AppendLabels appends labels with every reference replaced by the label
// element it refers to: the bytes Remote-Write 1.0 sends, and what may be
// kept apart from the labels' set. It panics on bytes LabelsBuilder did not
// write, as the encoders do.
func AppendLabels(dst, labels []byte) []byte {
	return appendExpanded(dst, labels, internedElems())
}

// appendExpanded is AppendLabels with the interned table loaded once. It
// is the send path's inner loop, so each element, literal or referred to,
// is found by one switch on its first byte and copied on its own; the
// one-byte lengths and two-byte references nearly all of them have are
// read inline, the rest left to resolve and elemLen. Copying runs of
// literals together took more branches than it saved copies, and a call
// per reference costs a tenth of the encoding.
//
// An element of up to wideCopy bytes is copied with four 16-byte stores,
// not by copy's call to memmove (always four: a branch on its length, with
// half the elements either side of 32 bytes, cost more than the stores).
// Where both the element's and dst's capacity reach wideCopy bytes on, the
// stores may read past the element and write past it into dst's spare
// room, which the next element or the caller overwrites. Reads past an
// element stay inside what was written before it was handed out: a
// series' labels end their capacity at their set's end
// (SeriesSet.Labels), and an interned element is alone in a buffer of at
// least wideCopy bytes.
func appendExpanded(dst, labels []byte, table [][]byte) []byte {
	c := uint64(cap(labels))
	for i := 0; i < len(labels); {
		if i+1 >= len(labels) {
			panic("encode: malformed label bytes")
		}
		tag, b := labels[i], labels[i+1]
		var elem []byte
		switch {
		case tag == tagTimeSeriesLabels && b < 0x80:
			if n := i + 2 + int(b); n <= len(labels) {
				elem = labels[i:n]
				i = n
			} // else elemLen below refuses it
		case tag >= refInterned2:
			if v := interned2(tag, b); v < uint64(len(table)) {
				elem = table[v]
				i += 2
			}
		case tag >= refShared2:
			if v := shared2(tag, b); v != 0 && v <= c {
				tail := labels[:c][c-v:]
				if len(tail) > 1 && tail[0] == tagTimeSeriesLabels && tail[1] < 0x80 && int(tail[1])+2 <= len(tail) {
					elem = tail[:2+int(tail[1])]
					i += 2
				}
			}
		}
		if elem == nil {
			if labels[i] == tagTimeSeriesLabels {
				l := elemLen(labels[i:])
				if l == 0 {
					panic("encode: malformed label bytes")
				}
				elem = labels[i : i+l]
				i += l
			} else {
				var n int
				if elem, n = resolve(labels[i:], table); n == 0 {
					panic("encode: malformed label reference")
				}
				i += n
			}
		}
		if l := len(elem); l <= wideCopy && cap(elem) >= wideCopy && cap(dst)-len(dst) >= wideCopy {
			n := len(dst)
			d, e := dst[n:n+wideCopy], elem[:wideCopy]
			*(*[16]byte)(d[0:16]) = *(*[16]byte)(e[0:16])
			*(*[16]byte)(d[16:32]) = *(*[16]byte)(e[16:32])
			*(*[16]byte)(d[32:48]) = *(*[16]byte)(e[32:48])
			*(*[16]byte)(d[48:64]) = *(*[16]byte)(e[48:64])
			dst = dst[:n+l]
		} else {
			dst = append(dst, elem...)
		}
	}
	return dst
}

// expandedLen is the length of appendExpanded's output for labels, without
// writing it, with the same fast paths for short elements and two-byte
// references.
func expandedLen(labels []byte, table [][]byte) int {
	c := uint64(cap(labels))
	n := 0
	for i := 0; i+1 < len(labels); {
		tag, b := labels[i], labels[i+1]
		switch {
		case tag == tagTimeSeriesLabels && b < 0x80:
			n += 2 + int(b)
			i += 2 + int(b)
			continue
		case tag >= refInterned2:
			if v := interned2(tag, b); v < uint64(len(table)) {
				n += len(table[v])
				i += 2
				continue
			}
		case tag >= refShared2:
			if v := shared2(tag, b); v != 0 && v <= c {
				if l := elemLen(labels[:c][c-v:]); l != 0 {
					n += l
					i += 2
					continue
				}
			}
		}
		if l := elemLen(labels[i:]); l != 0 {
			n += l
			i += l
			continue
		}
		elem, k := resolve(labels[i:], table)
		if k == 0 {
			return n
		}
		n += len(elem)
		i += k
	}
	return n
}

// EqualLabels reports whether two series' labels are the same labels,
// however each is stored: equal bytes may refer to different objects'
// shared labels, and different bytes may hold the same labels.
func EqualLabels(a, b []byte) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) && cap(a) == cap(b) {
		return true
	}
	for {
		an, av, arest, aok := NextLabel(a)
		bn, bv, brest, bok := NextLabel(b)
		if !aok || !bok {
			return !aok && !bok && len(a) == 0 && len(b) == 0
		}
		if !bytes.Equal(an, bn) || !bytes.Equal(av, bv) {
			return false
		}
		a, b = arest, brest
	}
}

// IsLiteral reports whether labels hold no references: bytes read from
// outside the process (a disk buffer) must not, since a reference there
// would point into whatever follows them.
func IsLiteral(labels []byte) bool {
	for i := 0; i < len(labels); {
		l := elemLen(labels[i:])
		if l == 0 {
			return false
		}
		i += l
	}
	return true
}

// Literal returns s with every reference expanded (AppendLabels), built in
// dst's space (reused: dst is reset), exposition trailers kept: the form a
// set takes outside the process. Timestamps are shared with s.
func (s *SeriesSet) Literal(dst *SeriesSet) *SeriesSet {
	dst.Reset()
	dst.Timestamps = s.Timestamps
	for i, r := range s.Refs {
		off := len(dst.Buf)
		dst.Buf = AppendLabels(dst.Buf, s.Labels(i))
		r.Off, r.Len = uint32(off), uint32(len(dst.Buf)-off)
		dst.Refs = append(dst.Refs, r)
		dst.Buf = append(dst.Buf, s.Trailer(i)...)
	}
	return dst
}
