package encode

import (
	"math"
	"slices"

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
	// Labels is the series' encoded labels, as made by LabelsBuilder.
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
// Each Sample message is marshalled by prompb.Sample itself; as a snapshot
// gives all its samples one timestamp and most values are 0 or 1, the bytes
// of the previous sample are reused when value and timestamp repeat.
func AppendWriteRequest(dst []byte, samples []Sample) []byte {
	var (
		prevBits uint64
		prevTS   int64
		prev     [32]byte // a prompb.Sample is at most 1+8+1+10 bytes
		prevLen  = -1
	)
	for i := range samples {
		s := &samples[i]
		bits := math.Float64bits(s.Value)
		if prevLen < 0 || bits != prevBits || s.Timestamp != prevTS {
			ps := prompb.Sample{Value: s.Value, Timestamp: s.Timestamp}
			prevLen = ps.Size()
			if _, err := ps.MarshalToSizedBuffer(prev[:prevLen]); err != nil {
				panic("encode: marshalling prompb.Sample: " + err.Error())
			}
			prevBits, prevTS = bits, s.Timestamp
		}
		sn := prevLen
		// TimeSeries = labels ++ samples(tag, len, Sample)
		tsLen := len(s.Labels) + 1 + varintLen(uint64(sn)) + sn
		need := 1 + varintLen(uint64(tsLen)) + tsLen
		dst = slices.Grow(dst, need)
		dst = append(dst, tagWriteRequestTimeseries)
		dst = appendVarint(dst, uint64(tsLen))
		dst = append(dst, s.Labels...)
		dst = append(dst, tagTimeSeriesSamples)
		dst = appendVarint(dst, uint64(sn))
		dst = append(dst, prev[:sn]...)
	}
	return dst
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
