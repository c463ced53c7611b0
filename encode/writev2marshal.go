package encode

import (
	"encoding/binary"
	"math"
	"math/bits"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// v2Series is one series of a Remote-Write 2.0 request: its label refs end
// at refsEnd in V2Encoder.refs (and start where the previous series'
// end), its metadata is V2Encoder.metas[meta] unless meta is metaNone, and
// it carries one sample.
type v2Series struct {
	refsEnd uint32
	// refsLen is the length of the packed refs.
	refsLen   uint32
	meta      int32
	value     float64
	timestamp int64
}

// Protobuf tags of io.prometheus.write.v2 fields (field number << 3 | wire
// type).
const (
	tagV2Symbols    = 4<<3 | 2 // Request.symbols
	tagV2Timeseries = 5<<3 | 2 // Request.timeseries
	tagV2LabelsRefs = 1<<3 | 2 // TimeSeries.labels_refs, packed
	tagV2Samples    = 2<<3 | 2 // TimeSeries.samples
	tagV2Metadata   = 5<<3 | 2 // TimeSeries.metadata
	tagV2Value      = 1<<3 | 1 // Sample.value, fixed64
	tagV2Timestamp  = 2 << 3   // Sample.timestamp, varint
	tagV2Type       = 1 << 3   // Metadata.type, varint
	tagV2HelpRef    = 3 << 3   // Metadata.help_ref, varint
	tagV2UnitRef    = 4 << 3   // Metadata.unit_ref, varint
)

// appendRequest appends the request's bytes to dst, forwards, in one
// pass: the same bytes writev2.Request.Marshal writes for the symbols and
// series (fields in number order, proto3 zero values left out, metadata
// always present as gogo writes a non-nullable message), without building
// its structs.
func (e *V2Encoder) appendRequest(dst []byte) []byte {
	size := 0
	for _, s := range e.strs {
		size += 1 + varintLen(uint64(len(s))) + len(s)
	}
	start := uint32(0)
	for i := range e.series {
		s := &e.series[i]
		s.refsLen = uint32(refsLen(e.refs[start:s.refsEnd]))
		n := e.seriesLen(s)
		size += 1 + varintLen(uint64(n)) + n
		start = s.refsEnd
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	for _, s := range e.strs {
		dst = append(dst, tagV2Symbols)
		dst = appendVarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	start = 0
	for i := range e.series {
		s := &e.series[i]
		refs := e.refs[start:s.refsEnd]
		start = s.refsEnd
		dst = append(dst, tagV2Timeseries)
		dst = appendVarint(dst, uint64(e.seriesLen(s)))
		if len(refs) > 0 {
			dst = append(dst, tagV2LabelsRefs)
			dst = appendVarint(dst, uint64(s.refsLen))
			for _, r := range refs {
				dst = appendVarint(dst, uint64(r))
			}
		}
		dst = append(dst, tagV2Samples)
		dst = appendVarint(dst, uint64(sampleLen(s)))
		if s.value != 0 {
			dst = append(dst, tagV2Value)
			dst = appendFixed64(dst, s.value)
		}
		if s.timestamp != 0 {
			dst = append(dst, tagV2Timestamp)
			dst = appendVarint(dst, uint64(s.timestamp))
		}
		dst = append(dst, tagV2Metadata)
		if s.meta == metaNone {
			dst = append(dst, 0)
			continue
		}
		m := &e.metas[s.meta]
		dst = appendVarint(dst, uint64(metadataLen(m)))
		if m.Type != 0 {
			dst = append(dst, tagV2Type)
			dst = appendVarint(dst, uint64(m.Type))
		}
		if m.HelpRef != 0 {
			dst = append(dst, tagV2HelpRef)
			dst = appendVarint(dst, uint64(m.HelpRef))
		}
		if m.UnitRef != 0 {
			dst = append(dst, tagV2UnitRef)
			dst = appendVarint(dst, uint64(m.UnitRef))
		}
	}
	return dst
}

// seriesLen is the length of a TimeSeries message's body.
func (e *V2Encoder) seriesLen(s *v2Series) int {
	n := 0
	if s.refsLen > 0 {
		n += 1 + varintLen(uint64(s.refsLen)) + int(s.refsLen)
	}
	sl := sampleLen(s)
	n += 1 + varintLen(uint64(sl)) + sl
	ml := 0
	if s.meta != metaNone {
		ml = metadataLen(&e.metas[s.meta])
	}
	return n + 1 + varintLen(uint64(ml)) + ml
}

// refsLen is the length of packed label refs.
func refsLen(refs []uint32) int {
	n := 0
	for _, r := range refs {
		// A uint32's varint takes one byte per 7 bits, at least one.
		n += (bits.Len32(r|1) + 6) / 7
	}
	return n
}

func sampleLen(s *v2Series) int {
	n := 0
	if s.value != 0 {
		n += 9
	}
	if s.timestamp != 0 {
		n += 1 + varintLen(uint64(s.timestamp))
	}
	return n
}

func metadataLen(m *writev2.Metadata) int {
	n := 0
	if m.Type != 0 {
		n += 1 + varintLen(uint64(m.Type))
	}
	if m.HelpRef != 0 {
		n += 1 + varintLen(uint64(m.HelpRef))
	}
	if m.UnitRef != 0 {
		n += 1 + varintLen(uint64(m.UnitRef))
	}
	return n
}

func appendFixed64(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}
