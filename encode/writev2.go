package encode

import (
	"encoding/binary"
	"slices"
	"unsafe"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Protobuf tags of the prompb.Label fields (field number << 3 | wire type 2).
const (
	tagLabelName  = 1<<3 | 2
	tagLabelValue = 2<<3 | 2
)

// MetricType is a metric family's type as a MetadataFunc reports it. The
// values are in the order of watch.MetricType, so one converts to the other.
type MetricType uint8

// The metric types kube-state-metrics uses.
const (
	TypeGauge MetricType = iota
	TypeCounter
	TypeInfo
	TypeStateSet
)

// v2Type maps a family's type to the Remote-Write 2.0 enum. The enum has
// METRIC_TYPE_INFO and METRIC_TYPE_STATESET (and Prometheus' own
// writev2.FromMetadataType maps OpenMetrics info and stateset to them), but
// info and stateset are sent as gauge here: the classic text format that
// kube-state-metrics is scraped in has no such types, so gauge is what a
// Prometheus scraping it would forward and what every receiver understands.
// The series themselves (value 1, one per state) are the same either way.
func v2Type(t MetricType) writev2.Metadata_MetricType {
	switch t {
	case TypeCounter:
		return writev2.Metadata_METRIC_TYPE_COUNTER
	case TypeGauge, TypeInfo, TypeStateSet:
		return writev2.Metadata_METRIC_TYPE_GAUGE
	default:
		return writev2.Metadata_METRIC_TYPE_UNSPECIFIED
	}
}

// Metadata describes a metric family; Remote-Write 2.0 carries it in every
// series.
type Metadata struct {
	// Type is the family's type.
	Type MetricType
	// Help is the HELP text; empty sends none.
	Help string
	// Unit is the family's unit (e.g. "seconds"); empty sends none.
	Unit string
}

// MetadataFunc returns the metadata of the family called name, or false when
// none is known. name aliases the encoder's scratch space and is valid only
// during the call: a func that keeps it must copy it (strings.Clone).
type MetadataFunc func(name string) (Metadata, bool)

// V2Encoder encodes io.prometheus.write.v2.Request (Remote-Write 2.0) bodies:
// a symbol table per request, each series as pairs of symbol references, one
// sample and, when Metadata knows the family, its type, help and unit.
//
// It walks the label bytes of each Sample as they are stored (refs.go) and
// writes each series' TimeSeries message as it goes, one pass, no structs.
// A label's refs are found without hashing its bytes where its storage
// says who it is: an interned label by its index, a label shared by an
// object's series by its address in the set (labelTable). Only literal
// labels and the first sight of each other one in a request are looked up
// by their bytes. Once its buffers have grown to a batch's size, encoding
// allocates nothing.
//
// The zero value is ready to use; a V2Encoder is not safe for concurrent use.
type V2Encoder struct {
	// Metadata looks up each series' family by metric name; nil sends no
	// metadata.
	Metadata MetadataFunc

	// gen numbers the requests; the entries of interned, shared and
	// symbols stamped with another number are from earlier requests,
	// whose refs mean nothing in this one.
	gen uint32
	// interned holds, by index in the process's interned table, the refs
	// of the interned labels this request has met.
	interned []internedRefs
	// shared holds the refs of the shared labels this request has met, by
	// address.
	shared labelTable
	// prev holds the shared labels of the previous series, in order, and
	// cur those of the current one, to become prev. The series of one
	// object come one after the other and refer to the same shared
	// labels, so most are found in prev at next (the place after the
	// last one found), or one further, without a lookup.
	prev, cur []sharedRef
	next      int
	// symbols maps each string of the request to its index in strs; its
	// keys are in arena.
	symbols contentTable[uint32]
	// strs is the request's symbol table; strs[0] is "" (spec: "symbols[0]
	// MUST be an empty string"), so a zero ref means empty.
	strs []span
	// arena holds the strings of strs.
	arena []byte
	// wide holds the packed refs (packPair) of labels whose refs' varints
	// do not fit labelRefs.enc.
	wide []uint64
	// symMeta has one entry per symbol in strs: for a metric name, the
	// index in metas of its family's metadata, or metaUnknown until looked
	// up, or metaNone. Metadata is then looked up once per family and
	// request, not once per series.
	symMeta []int32
	// metas holds the TimeSeries.metadata field of each family looked up
	// in this request, as written.
	metas []metadataField
	// ts keeps the encoded timestamp of the last sample.
	ts sampleTime
	// buf holds the request: room for its symbols, which are known only
	// at the end, then its TimeSeries fields as written, back to back.
	// The symbols are written at the end of their room, and the request
	// starts where they do, so the series never move; unless the room
	// was too small (head is the last request's symbols' bytes and a
	// quarter).
	buf  []byte
	head int
	// raw is the marshalled, uncompressed request: a slice of buf.
	raw []byte
}

// span locates a string in V2Encoder.arena.
type span struct{ off, n uint32 }

// labelRefs is one label as a request writes it: the varints of its name
// ref and its value ref.
type labelRefs struct {
	// enc holds the two varints in its low bytes, little-endian, and their
	// length in its top byte; with a top byte of 0, its low 32 bits index
	// V2Encoder.wide instead.
	enc uint64
	// metric is, for a metric name label (__name__), 1 + its value's ref;
	// 0 for any other label.
	metric uint32
}

// sharedRef is the address of a shared label and its refs.
type sharedRef struct {
	addr uintptr
	refs labelRefs
}

// maxPrev caps the shared labels of a series kept for the next.
const maxPrev = 16

// internedRefs are the refs of an interned label in the request numbered
// gen.
type internedRefs struct {
	refs labelRefs
	gen  uint32
}

// maxEnc is the most bytes labelRefs.enc holds; two refs below 1<<21 (three
// varint bytes each) always fit. A var so that tests can send labels the
// other way, which only requests of millions of symbols take.
var maxEnc = 7

func packPair(name, value uint32) uint64 { return uint64(name)<<32 | uint64(value) }

// Values of V2Encoder.symMeta that are not indexes.
const (
	metaUnknown = -1
	metaNone    = -2
)

// Reset forgets the symbols of the previous request, keeping all capacity.
// Encode calls it; calling it after a large batch does not free memory.
func (e *V2Encoder) Reset() {
	if e.gen++; e.gen == 0 { // wrapped: stamps of 4 billion requests ago would match
		clear(e.interned)
		e.shared.clear()
		e.symbols.clear()
		e.gen = 1
	}
	e.shared.reset()
	e.prev, e.cur = e.prev[:0], e.cur[:0]
	e.symbols.reset()
	e.strs = append(e.strs[:0], span{})
	e.arena = e.arena[:0]
	e.wide = e.wide[:0]
	e.symMeta = append(e.symMeta[:0], metaNone)
	e.metas = e.metas[:0]
}

// Encode implements RequestEncoder. It panics if a Sample's Labels are not
// label bytes as a LabelsBuilder writes them.
func (e *V2Encoder) Encode(dst []byte, samples []Sample) []byte {
	e.Reset()
	table := internedElems()
	buf := slices.Grow(e.buf[:0], e.head)[:e.head]
	for i := range samples {
		buf = e.appendSeries(buf, &samples[i], table)
	}
	e.buf, e.raw = e.finish(buf)
	return Compress(dst, e.raw)
}

// ContentType implements RequestEncoder.
func (*V2Encoder) ContentType() string { return ContentTypeV2 }

// RawLen implements RequestEncoder.
func (e *V2Encoder) RawLen() int { return len(e.raw) }

// Version implements RequestEncoder.
func (*V2Encoder) Version() string { return VersionV2 }

// labelRefs returns the refs of the label at the start of labels[i:], a
// series' label bytes as LabelsBuilder stores them (label elements and
// references to them: refs.go), and the length of its bytes there. base is
// the address of labels' first byte.
func (e *V2Encoder) labelRefs(labels []byte, i int, base uintptr, table [][]byte) (labelRefs, int) {
	if i+1 >= len(labels) {
		panic("encode: malformed label bytes")
	}
	tag, b := labels[i], labels[i+1]
	switch {
	case tag >= refInterned2:
		// An interned label, found by its index.
		v := interned2(tag, b)
		if v < uint64(len(e.interned)) && e.interned[v].gen == e.gen {
			return e.interned[v].refs, 2
		}
		if v < uint64(len(table)) {
			refs := e.pairRefs(table[v])
			if v >= uint64(len(e.interned)) {
				e.interned = slices.Grow(e.interned, int(v)+1-len(e.interned))[:v+1]
			}
			e.interned[v] = internedRefs{refs: refs, gen: e.gen}
			return refs, 2
		}
	case tag >= refShared2:
		// A label of the object's shared region, found by its address:
		// every series of the object refers to the same bytes.
		c := uint64(cap(labels))
		if v := shared2(tag, b); v != 0 && v <= c {
			addr := base + uintptr(c-v)
			refs, ok := e.fromPrev(addr)
			if !ok {
				refs = e.sharedRefs(addr, labels[:c][c-v:])
			}
			if len(e.cur) < maxPrev {
				e.cur = append(e.cur, sharedRef{addr: addr, refs: refs})
			}
			return refs, 2
		}
	case tag == tagTimeSeriesLabels:
		l := elemLen(labels[i:])
		if l == 0 {
			panic("encode: malformed label bytes")
		}
		return e.pairRefs(labels[i : i+l]), l
	}
	// The long forms (refs.go), past what two bytes hold.
	elem, n := resolve(labels[i:], table)
	if n == 0 {
		panic("encode: malformed label bytes")
	}
	return e.pairRefs(elem), n
}

// fromPrev returns the refs of the shared label at addr if it is the
// previous series' next shared label (at e.next) or the one after.
func (e *V2Encoder) fromPrev(addr uintptr) (labelRefs, bool) {
	j := e.next
	if j < len(e.prev) && e.prev[j].addr == addr {
		e.next = j + 1
		return e.prev[j].refs, true
	}
	if j++; j < len(e.prev) && e.prev[j].addr == addr {
		e.next = j + 1
		return e.prev[j].refs, true
	}
	return labelRefs{}, false
}

// sharedRefs returns the refs of the shared label at addr, whose bytes
// start b.
func (e *V2Encoder) sharedRefs(addr uintptr, b []byte) labelRefs {
	refs, slot, ok := e.shared.find(addr, e.gen)
	if ok {
		return refs
	}
	l := elemLen(b)
	if l == 0 {
		panic("encode: malformed label bytes")
	}
	refs = e.pairRefs(b[:l])
	e.shared.insert(slot, addr, refs, e.gen)
	return refs
}

// pairRefs returns the refs of one label element, interning its name and
// value if the request has not seen them yet.
func (e *V2Encoder) pairRefs(elem []byte) labelRefs {
	name, value, _, ok := NextLabel(elem)
	if !ok {
		panic("encode: malformed label bytes")
	}
	vr := e.symbolize(value)
	nr := e.symbolize(name)
	var refs labelRefs
	if string(name) == MetricName {
		refs.metric = 1 + vr
	}
	if varintLen(uint64(nr))+varintLen(uint64(vr)) <= maxEnc {
		var buf [8]byte
		n := len(appendVarint(appendVarint(buf[:0], uint64(nr)), uint64(vr)))
		refs.enc = binary.LittleEndian.Uint64(buf[:]) | uint64(n)<<56
	} else {
		refs.enc = uint64(len(e.wide))
		e.wide = append(e.wide, packPair(nr, vr))
	}
	return refs
}

// symbolize returns the symbol ref of b, adding a copy of it to the table
// if it is new.
func (e *V2Encoder) symbolize(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	h := e.symbols.hash(b)
	ref, slot, ok := e.symbols.find(e.arena, b, h, e.gen)
	if ok {
		return ref
	}
	s := span{off: uint32(len(e.arena)), n: uint32(len(b))}
	e.arena = append(e.arena, b...)
	return e.addSymbol(s, h, slot)
}

// symbolizeString is symbolize for a string: it is copied to the arena to
// be looked up, and dropped again if the table has it.
func (e *V2Encoder) symbolizeString(str string) uint32 {
	if str == "" {
		return 0
	}
	s := span{off: uint32(len(e.arena)), n: uint32(len(str))}
	e.arena = append(e.arena, str...)
	b := e.arena[s.off:]
	h := e.symbols.hash(b)
	ref, slot, ok := e.symbols.find(e.arena, b, h, e.gen)
	if ok {
		e.arena = e.arena[:s.off]
		return ref
	}
	return e.addSymbol(s, h, slot)
}

// addSymbol adds the string at s, whose hash is h, to the table, in the
// slot symbols.find returned for it.
func (e *V2Encoder) addSymbol(s span, h uint32, slot int) uint32 {
	ref := uint32(len(e.strs))
	e.strs = append(e.strs, s)
	e.symMeta = append(e.symMeta, metaUnknown)
	e.symbols.insert(e.arena, slot, s.off, s.n, h, ref, e.gen)
	return ref
}

// metadata returns the index in e.metas of the metadata of the family
// whose name has symbol ref name, or metaNone.
func (e *V2Encoder) metadata(name uint32) int32 {
	if e.Metadata == nil || name == 0 {
		return metaNone
	}
	if i := e.symMeta[name]; i != metaUnknown {
		return i
	}
	sym := e.strs[name]
	md, ok := e.Metadata(unsafe.String(&e.arena[sym.off], int(sym.n)))
	if !ok {
		e.symMeta[name] = metaNone
		return metaNone
	}
	help := e.symbolizeString(md.Help) // may append to symMeta
	unit := e.symbolizeString(md.Unit)
	i := int32(len(e.metas))
	e.symMeta[name] = i
	e.metas = append(e.metas, newMetadataField(v2Type(md.Type), help, unit))
	return i
}
