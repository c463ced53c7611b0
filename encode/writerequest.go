package encode

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/klauspost/compress/s2"
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
// the extended buffer. It allocates only when dst must grow (a sample is
// written in place, so it grows when a sample's end leaves it less than 27
// bytes of room, even if the sample itself would have fitted).
//
// A snapshot gives all its samples one timestamp, so the timestamp's varint
// is kept from the sample before and reused when it repeats.
func AppendWriteRequest(dst []byte, samples []Sample) []byte {
	var ts sampleTime
	table := internedElems()
	for i := range samples {
		s := &samples[i]
		// TimeSeries = labels ++ samples(tag, len, Sample), written behind
		// two bytes for its length, which the expanded labels give: most
		// series take two, and the others move by a byte or so.
		start := len(dst)
		dst = append(dst, tagWriteRequestTimeseries, 0, 0)
		body := len(dst)
		dst = appendExpanded(dst, s.Labels, table)
		dst = ts.appendSample(dst, s.Value, s.Timestamp)
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

// SeriesSize returns the bytes s takes in a Remote-Write 1.0 WriteRequest
// (AppendWriteRequest): its TimeSeries field, tag and length included. It
// reads the labels once, following references, and allocates nothing, so
// that a shard can cap a request's bytes as it builds the batch. Bytes
// LabelsBuilder did not write count up to where they stop parsing.
func SeriesSize(s *Sample) int {
	n := expandedLen(s.Labels, internedElems())
	// TimeSeries.samples: tag, length, then the value and timestamp
	// fields, each left out when 0 (appendSample).
	n += 2
	if s.Value != 0 {
		n += 9
	}
	if s.Timestamp != 0 {
		n += 1 + varintLen(uint64(s.Timestamp))
	}
	return 1 + varintLen(uint64(n)) + n
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

// Protobuf tags of prompb.Sample's fields: value (1, fixed64) and
// timestamp (2, varint).
const (
	tagSampleValue     = 1<<3 | 1
	tagSampleTimestamp = 2 << 3 // wire type 0
)

// sampleTime keeps the encoded timestamp field of the last sample; its
// zero value is that of a timestamp of 0, which proto3 leaves out.
type sampleTime struct {
	ts int64
	n  int
	// buf holds the field in its first n bytes (at most 11); it is
	// 16 long so that appendSample copies it as one 16-byte block.
	buf [16]byte
}

// appendSample appends the TimeSeries.samples field holding
// prompb.Sample{Value: v, Timestamp: ts} as prompb marshals it: proto3, so a
// field equal to 0 (and a value of -0, which equals 0) is left out. It
// writes in place, with fixed-size stores and no call: this
// runs once a sample, where appending it byte by byte or through copy
// costs too much.
func (c *sampleTime) appendSample(dst []byte, v float64, ts int64) []byte {
	if ts != c.ts {
		c.ts, c.n = ts, 0
		if ts != 0 {
			c.buf[0] = tagSampleTimestamp
			c.n = 1 + len(appendVarint(c.buf[1:1], uint64(ts)))
		}
	}
	n := c.n
	if v != 0 {
		n += 9
	}
	// The tag, the length, the value, and the timestamp field as a whole
	// block, of which only its n bytes are kept.
	const most = 2 + 9 + len(c.buf)
	dst = slices.Grow(dst, most)
	l := len(dst)
	d := dst[l : l+most]
	d[0], d[1] = tagTimeSeriesSamples, byte(n) // n: at most 9 + 11, one varint byte
	k := 2
	if v != 0 {
		d[2] = tagSampleValue
		binary.LittleEndian.PutUint64(d[3:11], math.Float64bits(v))
		k = 11
	}
	*(*[16]byte)(d[k : k+16]) = c.buf
	return dst[:l+k+c.n]
}

// compressChunk is how much of the source AppendCompressed hands s2 at a
// time when dst has no room for the whole. Chunks compress apart, which
// costs bytes on a long source (see requestChunk); the disk buffer's
// records, its main user, are about this long.
const compressChunk = 256 << 10

// Compress snappy-compresses src in the block format Remote-Write requires,
// reusing dst's capacity: it is AppendCompressed(dst[:0], src).
func Compress(dst, src []byte) []byte { return AppendCompressed(dst[:0], src) }

// AppendCompressed appends src snappy-compressed in the block format
// Remote-Write requires to dst. It uses s2's Snappy mode, whose output any
// Snappy decoder reads: on real clusters' requests it is smaller than
// golang/snappy's and a little faster (docs/performance.md).
//
// With room for MaxCompressedLen(len(src)) past dst's length, the result is
// in dst's array. Otherwise src is compressed a chunk at a time, so that
// dst grows to about the compressed length rather than to the length of
// src: a Snappy block is a header (the decoded length) and a run of
// elements, and the elements of chunks compressed apart, each copy
// pointing back inside its own chunk, decode in sequence.
func AppendCompressed(dst, src []byte) []byte {
	at := len(dst)
	if n := s2.MaxEncodedLen(len(src)); n >= 0 && cap(dst)-at >= n {
		return dst[:at+len(s2.EncodeSnappy(dst[at:at+n], src))]
	}
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	for len(src) > 0 {
		chunk := src[:min(len(src), compressChunk)]
		src = src[len(chunk):]
		dst = appendElements(dst, chunk)
	}
	return dst
}

// appendElements appends the Snappy elements of src compressed alone, with
// no header: the caller writes the decoded length of everything it appends
// in front.
func appendElements(dst, src []byte) []byte {
	room := s2.MaxEncodedLen(len(src))
	dst = slices.Grow(dst, room)
	at := len(dst)
	c := s2.EncodeSnappy(dst[at:at+room], src)
	// c is src's own header and its elements: keep the elements.
	_, hdr := binary.Uvarint(c)
	return dst[:at+copy(dst[at:at+room], c[hdr:])]
}

// MaxCompressedLen is the most Compress writes for n bytes: with dst's
// capacity at least this, the result is in dst's array.
func MaxCompressedLen(n int) int { return s2.MaxEncodedLen(n) }

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
