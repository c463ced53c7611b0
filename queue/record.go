package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/golang/snappy"

	"github.com/kube-state-push/kube-state-push/encode"
)

// A disk buffer record is one batch in a protocol-neutral form, so that the
// send path may pick (and change) the Remote-Write version at send time:
//
//	[version byte = 1][samples uvarint][snappy block of a prometheus.WriteRequest]
//
// The WriteRequest holds one TimeSeries per sample, in order, exactly as
// encode.AppendWriteRequest writes it, so decoding gives back samples whose
// Labels are the encoded label fields as encode.LabelsBuilder made them. The
// sample count up front lets the size cap count what it drops without
// decompressing.
const recordVersion = 1

// Protobuf tags read when decoding a record's WriteRequest.
const (
	tagTimeseries   = 1<<3 | 2 // WriteRequest.timeseries, length-delimited
	tagLabels       = 1<<3 | 2 // TimeSeries.labels, length-delimited
	tagSamples      = 2<<3 | 2 // TimeSeries.samples, length-delimited
	tagSampleValue  = 1<<3 | 1 // Sample.value, fixed64
	tagSampleMillis = 2<<3 | 0 // Sample.timestamp, varint
)

// errRecord is wrapped by every error about a record that cannot be read.
var errRecord = errors.New("bad buffer record")

// recordScratch is the reusable space for encoding records.
type recordScratch struct {
	// raw is the uncompressed WriteRequest.
	raw []byte
	// rec is the record.
	rec []byte
}

// encode encodes samples as a record in s.rec and returns it; it is
// valid until the next call.
func (s *recordScratch) encode(samples []encode.Sample) []byte {
	s.raw = encode.AppendWriteRequest(s.raw[:0], samples)
	s.rec = append(s.rec[:0], recordVersion)
	s.rec = binary.AppendUvarint(s.rec, uint64(len(samples)))
	head := len(s.rec)
	n := snappy.MaxEncodedLen(len(s.raw))
	if cap(s.rec) < head+n {
		grown := make([]byte, head, head+n)
		copy(grown, s.rec)
		s.rec = grown
	}
	body := snappy.Encode(s.rec[head:head+n], s.raw)
	s.rec = s.rec[:head+len(body)]
	return s.rec
}

// recordSamples returns the number of samples a record says it holds.
func recordSamples(rec []byte) (int, error) {
	n, _, err := recordHeader(rec)
	return n, err
}

// recordHeader returns the sample count and the compressed body of rec.
func recordHeader(rec []byte) (int, []byte, error) {
	if len(rec) == 0 || rec[0] != recordVersion {
		return 0, nil, fmt.Errorf("%w: unknown version", errRecord)
	}
	n, k := binary.Uvarint(rec[1:])
	if k <= 0 || n > math.MaxInt32 {
		return 0, nil, fmt.Errorf("%w: bad sample count", errRecord)
	}
	return int(n), rec[1+k:], nil
}

// decodeRecord appends the samples of rec to dst. Their Labels alias
// *scratch, which holds the decompressed request and is reused (grown when
// needed) across calls: the samples are valid until the next call with the
// same scratch.
func decodeRecord(rec []byte, scratch *[]byte, dst []encode.Sample) ([]encode.Sample, error) {
	n, body, err := recordHeader(rec)
	if err != nil {
		return dst, err
	}
	size, err := snappy.DecodedLen(body)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", errRecord, err)
	}
	if cap(*scratch) < size {
		*scratch = make([]byte, size)
	}
	raw, err := snappy.Decode((*scratch)[:size], body)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", errRecord, err)
	}
	start := len(dst)
	for len(raw) > 0 {
		if raw[0] != tagTimeseries {
			return dst[:start], fmt.Errorf("%w: unexpected field tag %#x in the request", errRecord, raw[0])
		}
		ts, rest, err := lengthDelimited(raw[1:])
		if err != nil {
			return dst[:start], err
		}
		s, err := decodeSeries(ts)
		if err != nil {
			return dst[:start], err
		}
		dst = append(dst, s)
		raw = rest
	}
	if got := len(dst) - start; got != n {
		return dst[:start], fmt.Errorf("%w: %d samples, header says %d", errRecord, got, n)
	}
	return dst, nil
}

// decodeSeries reads one TimeSeries with its labels first and one sample.
func decodeSeries(ts []byte) (encode.Sample, error) {
	var s encode.Sample
	i := 0
	for i < len(ts) && ts[i] == tagLabels {
		_, rest, err := lengthDelimited(ts[i+1:])
		if err != nil {
			return s, err
		}
		i = len(ts) - len(rest)
	}
	if i == 0 {
		return s, fmt.Errorf("%w: series without labels", errRecord)
	}
	s.Labels = ts[:i:i]
	if i >= len(ts) || ts[i] != tagSamples {
		return s, fmt.Errorf("%w: series without a sample", errRecord)
	}
	sample, rest, err := lengthDelimited(ts[i+1:])
	if err != nil {
		return s, err
	}
	if len(rest) != 0 {
		return s, fmt.Errorf("%w: series with more than one sample or other fields", errRecord)
	}
	for len(sample) > 0 {
		switch sample[0] {
		case tagSampleValue:
			if len(sample) < 9 {
				return s, fmt.Errorf("%w: truncated sample value", errRecord)
			}
			s.Value = math.Float64frombits(binary.LittleEndian.Uint64(sample[1:9]))
			sample = sample[9:]
		case tagSampleMillis:
			v, k := binary.Uvarint(sample[1:])
			if k <= 0 {
				return s, fmt.Errorf("%w: bad sample timestamp", errRecord)
			}
			s.Timestamp = int64(v)
			sample = sample[1+k:]
		default:
			return s, fmt.Errorf("%w: unexpected field tag %#x in a sample", errRecord, sample[0])
		}
	}
	return s, nil
}

// lengthDelimited splits b, which starts with a length varint, into the
// field's bytes and what follows.
func lengthDelimited(b []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: truncated field", errRecord)
	}
	end := k + int(n)
	return b[k:end:end], b[end:], nil
}
