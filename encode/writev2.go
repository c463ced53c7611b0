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
	// samples holds one sample per series; each TimeSeries.Samples is a
	// one-element slice of it.
	samples []writev2.Sample
	// series is the request's time series, reused between requests.
	series []writev2.TimeSeries
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

// Values of V2Encoder.symMeta that are not indexes.
const (
	metaUnknown = -1
	metaNone    = -2
)

// Reset forgets the symbols of the previous request, keeping all capacity.
// Encode calls it; calling it after a large batch does not free memory.
func (e *V2Encoder) Reset() {
	clear(e.symbols)
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
	}
	n := len(samples)
	e.samples = slices.Grow(e.samples[:0], n)[:n]
	e.series = slices.Grow(e.series[:0], n)[:n]
	for i := range samples {
		s := &samples[i]
		start := len(e.refs)
		name := e.appendLabelRefs(s.Labels)
		end := len(e.refs)
		e.samples[i] = writev2.Sample{Value: s.Value, Timestamp: s.Timestamp}
		e.series[i] = writev2.TimeSeries{
			LabelsRefs: e.refs[start:end:end],
			Samples:    e.samples[i : i+1 : i+1],
			Metadata:   e.metadata(name),
		}
	}
	req := writev2.Request{Symbols: e.strs, Timeseries: e.series}
	size := req.Size()
	if cap(e.raw) < size {
		e.raw = make([]byte, size)
	}
	e.raw = e.raw[:size]
	// The generated MarshalToSizedBuffer allocates a scratch slice per series
	// for the packed label refs; the optimized one does not.
	if m, err := req.OptimizedMarshalToSizedBuffer(e.raw); err != nil || m != size {
		panic("encode: marshalling writev2.Request: size mismatch or error")
	}
	return Compress(dst, e.raw)
}

// ContentType implements RequestEncoder.
func (*V2Encoder) ContentType() string { return ContentTypeV2 }

// Version implements RequestEncoder.
func (*V2Encoder) Version() string { return VersionV2 }

// appendLabelRefs walks encoded labels (repeated TimeSeries.labels, each a
// prompb.Label), appends a name ref and a value ref per label to e.refs, and
// returns the ref of the metric name (0 when the series has none).
func (e *V2Encoder) appendLabelRefs(b []byte) (nameRef uint32) {
	for len(b) > 0 {
		name, value, rest, ok := NextLabel(b)
		if !ok {
			panic("encode: malformed label bytes")
		}
		b = rest
		vr := e.symbolize(value)
		e.refs = append(e.refs, e.symbolize(name), vr)
		if string(name) == MetricName {
			nameRef = vr
		}
	}
	return nameRef
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

// metadata returns the metadata of the family whose name has symbol ref
// name.
func (e *V2Encoder) metadata(name uint32) writev2.Metadata {
	if e.Metadata == nil || name == 0 {
		return writev2.Metadata{}
	}
	switch i := e.symMeta[name]; i {
	case metaNone:
		return writev2.Metadata{}
	case metaUnknown:
	default:
		return e.metas[i]
	}
	md, ok := e.Metadata(e.strs[name])
	if !ok {
		e.symMeta[name] = metaNone
		return writev2.Metadata{}
	}
	m := writev2.Metadata{
		Type:    v2Type(md.Type),
		HelpRef: e.symbolizeString(md.Help), // may append to symMeta
		UnitRef: e.symbolizeString(md.Unit),
	}
	e.symMeta[name] = int32(len(e.metas))
	e.metas = append(e.metas, m)
	return m
}
