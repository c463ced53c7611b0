package encode

import (
	"math"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// Protobuf tags (field number << 3 | wire type 2) of the length-delimited
// fields written here.
const (
	tagWriteRequestTimeseries = 1<<3 | 2 // WriteRequest.timeseries
	tagTimeSeriesLabels       = 1<<3 | 2 // TimeSeries.labels
	tagTimeSeriesSamples      = 2<<3 | 2 // TimeSeries.samples
)

// StaleNaN is the float64 Prometheus reads as a staleness marker: the series
// ended at this sample's timestamp (Remote-Write 1.0 spec, "Stale Markers").
var StaleNaN = math.Float64frombits(0x7ff0000000000002)

// IsStaleNaN reports whether v is the staleness marker.
func IsStaleNaN(v float64) bool { return math.Float64bits(v) == 0x7ff0000000000002 }

// Sample is one series' sample ready to be sent.
type Sample struct {
	// Labels is the series' encoded labels, as made by LabelsBuilder (they
	// may refer to labels stored once: refs.go).
	Labels []byte
	// Value is the sample value (StaleNaN for a staleness marker).
	Value float64
	// Timestamp is in milliseconds since the Unix epoch.
	Timestamp int64
}

// AppendWriteRequest appends to dst the protobuf encoding of a
// prompb.WriteRequest holding one TimeSeries per sample, in order, and returns
// the extended buffer. It allocates only when dst must grow.
//
// Each Sample message is marshalled by prompb.Sample itself. A snapshot
// gives all its samples one timestamp and most values are 0 or 1, so the
// bytes of the last two distinct samples are kept and reused when one
// repeats.
func AppendWriteRequest(dst []byte, samples []Sample) []byte {
	var c sampleCache
	table := internedElems()
	for i := range samples {
		s := &samples[i]
		enc := c.encoded(s.Value, s.Timestamp)
		sn := len(enc)
		// TimeSeries = labels ++ samples(tag, len, Sample), written behind
		// two bytes for its length, which the expanded labels give: most
		// series take two, and the others move by a byte or so.
		start := len(dst)
		dst = append(dst, tagWriteRequestTimeseries, 0, 0)
		body := len(dst)
		dst = appendExpanded(dst, s.Labels, table)
		dst = append(dst, tagTimeSeriesSamples)
		dst = appendVarint(dst, uint64(sn))
		dst = append(dst, enc...)
		tsLen := len(dst) - body
		switch vl := varintLen(uint64(tsLen)); {
		case vl < 2:
			copy(dst[start+1+vl:], dst[body:])
			dst = dst[:len(dst)-(2-vl)]
		case vl > 2:
			dst = append(dst, make([]byte, vl-2)...)
			copy(dst[start+1+vl:], dst[body:body+tsLen])
		}
		putVarint(dst[start+1:], uint64(tsLen))
	}
	return dst
}

// putVarint writes v as a varint at the start of b, which has room for it.
func putVarint(b []byte, v uint64) {
	i := 0
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
}

// sampleCache holds the marshalled bytes of the last two distinct samples
// (value bits and timestamp), so that AppendWriteRequest marshals each
// distinct sample of a run once.
type sampleCache struct {
	// entries are the two samples; older is the index to replace next.
	entries [2]cachedSample
	older   int
}

// cachedSample is one marshalled prompb.Sample.
type cachedSample struct {
	bits uint64
	ts   int64
	n    int // 0: empty (a marshalled sample is at least 2 bytes)
	buf  [20]byte
}

// encoded returns the marshalled prompb.Sample{Value: v, Timestamp: ts}. The
// slice is valid until the second call after this one.
func (c *sampleCache) encoded(v float64, ts int64) []byte {
	bits := math.Float64bits(v)
	for i := range c.entries {
		if e := &c.entries[i]; e.n > 0 && e.bits == bits && e.ts == ts {
			c.older = 1 - i
			return e.buf[:e.n]
		}
	}
	e := &c.entries[c.older]
	c.older = 1 - c.older
	ps := prompb.Sample{Value: v, Timestamp: ts}
	e.n = ps.Size() // at most 1+8 (value) + 1+10 (timestamp)
	if _, err := ps.MarshalToSizedBuffer(e.buf[:e.n]); err != nil {
		panic("encode: marshalling prompb.Sample: " + err.Error())
	}
	e.bits, e.ts = bits, ts
	return e.buf[:e.n]
}

// Compress snappy-compresses src in the block format Remote-Write requires,
// reusing dst's capacity when it is large enough.
func Compress(dst, src []byte) []byte {
	n := snappy.MaxEncodedLen(len(src))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return snappy.Encode(dst[:n], src)
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
