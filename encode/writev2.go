package encode

import (
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
// It decodes the 1.0 label bytes of each Sample in place (no prompb.Label
// structs), interns the strings into a symbol table it keeps between
// requests, and marshals with the generated writev2 types, whose
// OptimizedMarshalToSizedBuffer writes label refs without a scratch slice.
// Once its buffers have grown to a batch's size, encoding allocates nothing.
//
// The zero value is ready to use; a V2Encoder is not safe for concurrent use.
type V2Encoder struct {
	// Metadata looks up each series' family by metric name; nil sends no
	// metadata.
	Metadata MetadataFunc

	// symbols maps each interned string to its index in strs. Keys alias
	// arena (or strings from Metadata) and are cleared by Reset before arena
	// is overwritten.
	symbols map[string]uint32
	// pairs maps a label element (one encoded prompb.Label) to its name and
	// value refs, packed by packPair. A series' labels repeat the labels of
	// the series before it and of other objects, so one lookup of the whole
	// element replaces two of its strings. Keys alias arena, like symbols'.
	pairs map[string]uint64
	// prev holds the elements of the previous series, whose labels are
	// still in the caller's samples: the series of one object share most
	// labels (namespace, pod, uid), which are found here without hashing.
	prev []prevElem
	// cur collects the current series' elements, to become prev.
	cur []prevElem
	// metricNameRef is the ref of "__name__" once interned, else 0.
	metricNameRef uint32
	// interned holds, by index in the process's interned table, the refs
	// of the elements this request has interned: those stamped with gen,
	// the request's number.
	interned []internedRefs
	gen      uint32
	// strs is the request's symbol table; strs[0] is "" (spec: "symbols[0]
	// MUST be an empty string"), so a zero ref means empty.
	strs []string
	// arena holds the bytes of the label strings in strs. Symbols are
	// unsafe.Strings over it, so that interning allocates no string per
	// symbol; appends that move it leave earlier strings on the old array,
	// which stays alive and unchanged while they refer to it.
	arena []byte
	// refs holds the label refs of every series back to back; each
	// TimeSeries.LabelsRefs is a slice of it.
	refs []uint32
	// series is the request's time series, reused between requests.
	series []v2Series
	// raw is the marshalled, uncompressed request.
	raw []byte
	// symMeta has one entry per symbol in strs: for a metric name, the
	// index in metas of its family's metadata, or metaUnknown until looked
	// up, or metaNone. Metadata is then looked up once per family and
	// request, not once per series.
	symMeta []int32
	// metas is the metadata of the families looked up in this request.
	metas []writev2.Metadata
}

// prevElem is one label element of the previous series and its refs.
type prevElem struct {
	elem []byte
	refs uint64
}

// internedRefs are the packed refs of an interned label element in the
// request numbered gen.
type internedRefs struct {
	gen  uint32
	refs uint64
}

// maxPrev caps the labels of one series remembered for the next: searching
// more costs about as much as the map lookup it avoids.
const maxPrev = 16

func packPair(name, value uint32) uint64 { return uint64(name)<<32 | uint64(value) }

// Values of V2Encoder.symMeta that are not indexes.
const (
	metaUnknown = -1
	metaNone    = -2
)

// Reset forgets the symbols of the previous request, keeping all capacity.
// Encode calls it; calling it after a large batch does not free memory.
func (e *V2Encoder) Reset() {
	clear(e.symbols)
	clear(e.pairs)
	e.prev, e.cur = e.prev[:0], e.cur[:0]
	if e.gen++; e.gen == 0 { // wrapped: stamps of 4 billion requests ago would match
		clear(e.interned)
		e.gen = 1
	}
	e.metricNameRef = 0
	e.strs = append(e.strs[:0], "")
	e.arena = e.arena[:0]
	e.refs = e.refs[:0]
	e.symMeta = append(e.symMeta[:0], metaNone)
	e.metas = e.metas[:0]
}

// Encode implements RequestEncoder. It panics if a Sample's Labels are not
// label bytes as a LabelsBuilder writes them.
func (e *V2Encoder) Encode(dst []byte, samples []Sample) []byte {
	e.Reset()
	if e.symbols == nil {
		e.symbols = make(map[string]uint32, len(samples))
		e.pairs = make(map[string]uint64, len(samples))
	}
	n := len(samples)
	e.series = slices.Grow(e.series[:0], n)[:n]
	table := internedElems()
	for i := range samples {
		s := &samples[i]
		name := e.appendLabelRefs(s.Labels, table)
		e.series[i] = v2Series{
			refsEnd:   uint32(len(e.refs)),
			meta:      e.metadata(name),
			value:     s.Value,
			timestamp: s.Timestamp,
		}
	}
	e.raw = e.appendRequest(e.raw[:0])
	// Keep no reference to the caller's labels.
	clear(e.prev[:cap(e.prev)])
	clear(e.cur[:cap(e.cur)])
	return Compress(dst, e.raw)
}

// ContentType implements RequestEncoder.
func (*V2Encoder) ContentType() string { return ContentTypeV2 }

// RawLen implements RequestEncoder.
func (e *V2Encoder) RawLen() int { return len(e.raw) }

// Version implements RequestEncoder.
func (*V2Encoder) Version() string { return VersionV2 }

// appendLabelRefs walks a series' labels as LabelsBuilder stores them
// (label elements and references to them: refs.go), appends a name ref and a
// value ref per label to e.refs, and returns the ref of the metric name (0
// when the series has none).
func (e *V2Encoder) appendLabelRefs(b []byte, table [][]byte) (nameRef uint32) {
	e.cur = e.cur[:0]
	for i := 0; len(b) > 0; i++ {
		var refs uint64
		var elem []byte
		if l := elemLen(b); l != 0 {
			elem, b = b[:l:l], b[l:]
			refs = e.elemRefs(elem, i)
		} else {
			var n int
			if elem, refs, n = e.refRefs(b, table, i); n == 0 {
				panic("encode: malformed label bytes")
			}
			b = b[n:]
		}
		e.refs = append(e.refs, uint32(refs>>32), uint32(refs))
		if n := uint32(refs >> 32); n != 0 && n == e.metricNameRef {
			nameRef = uint32(refs)
		}
		if i < maxPrev {
			e.cur = append(e.cur, prevElem{elem: elem, refs: refs})
		}
	}
	e.prev, e.cur = e.cur, e.prev
	return nameRef
}

// refRefs resolves the reference at the start of b, returning the element
// it refers to, its packed refs and the reference's length (0 if
// malformed). An interned element's refs are kept by its index, so that
// family names and enumeration values are found without hashing.
func (e *V2Encoder) refRefs(b []byte, table [][]byte, i int) (elem []byte, refs uint64, n int) {
	if len(b) >= 2 && b[0] >= refInterned2 {
		v := interned2(b[0], b[1])
		if v < uint64(len(e.interned)) && e.interned[v].gen == e.gen {
			return table[v], e.interned[v].refs, 2
		}
		if v >= uint64(len(table)) {
			return nil, 0, 0
		}
		elem, refs = table[v], e.pairRefs(table[v])
		if v >= uint64(len(e.interned)) {
			e.interned = slices.Grow(e.interned, int(v)+1-len(e.interned))[:v+1]
		}
		e.interned[v] = internedRefs{gen: e.gen, refs: refs}
		return elem, refs, 2
	}
	if elem, n = resolve(b, table); n == 0 {
		return nil, 0, 0
	}
	return elem, e.elemRefs(elem, i), n
}

// elemRefs returns the packed refs of a label element, looking first among
// the previous series' elements (at the same position i first), then in
// the request's table of elements.
func (e *V2Encoder) elemRefs(elem []byte, i int) uint64 {
	prev := e.prev
	if i < len(prev) && string(prev[i].elem) == string(elem) {
		return prev[i].refs
	}
	for j := range prev {
		if len(prev[j].elem) == len(elem) && string(prev[j].elem) == string(elem) {
			return prev[j].refs
		}
	}
	return e.pairRefs(elem)
}

// pairRefs returns the packed refs of one label element, interning its name
// and value if the request has not seen the element yet.
func (e *V2Encoder) pairRefs(elem []byte) uint64 {
	if refs, ok := e.pairs[string(elem)]; ok { // no allocation for the lookup
		return refs
	}
	name, value, _, ok := NextLabel(elem)
	if !ok {
		panic("encode: malformed label bytes")
	}
	refs := e.symbolizePair(name, value)
	off := len(e.arena)
	e.arena = append(e.arena, elem...)
	e.pairs[unsafe.String(&e.arena[off], len(elem))] = refs
	return refs
}

// symbolizePair interns a label's name and value.
func (e *V2Encoder) symbolizePair(name, value []byte) uint64 {
	vr := e.symbolize(value)
	nr := e.symbolize(name)
	if e.metricNameRef == 0 && string(name) == MetricName {
		e.metricNameRef = nr
	}
	return packPair(nr, vr)
}

// symbolize returns the symbol ref of b, adding a copy of it to the table
// if it is new.
func (e *V2Encoder) symbolize(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	if ref, ok := e.symbols[string(b)]; ok { // no allocation for the lookup
		return ref
	}
	off := len(e.arena)
	e.arena = append(e.arena, b...)
	return e.add(unsafe.String(&e.arena[off], len(b)))
}

// symbolizeString is symbolize for a string the caller owns (strings are
// immutable, so it is kept as it is).
func (e *V2Encoder) symbolizeString(s string) uint32 {
	if s == "" {
		return 0
	}
	if ref, ok := e.symbols[s]; ok {
		return ref
	}
	return e.add(s)
}

func (e *V2Encoder) add(s string) uint32 {
	ref := uint32(len(e.strs))
	e.strs = append(e.strs, s)
	e.symbols[s] = ref
	e.symMeta = append(e.symMeta, metaUnknown)
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
	md, ok := e.Metadata(e.strs[name])
	if !ok {
		e.symMeta[name] = metaNone
		return metaNone
	}
	m := writev2.Metadata{
		Type:    v2Type(md.Type),
		HelpRef: e.symbolizeString(md.Help), // may append to symMeta
		UnitRef: e.symbolizeString(md.Unit),
	}
	i := int32(len(e.metas))
	e.symMeta[name] = i
	e.metas = append(e.metas, m)
	return i
}
