package queue

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// recordSamplesFor returns n samples with labels of varied length, values
// that protobuf leaves out (0), special floats and negative timestamps.
func recordSamplesFor(n int) []encode.Sample {
	values := []float64{0, 1, -2.5, math.Inf(1), encode.StaleNaN, math.MaxFloat64}
	stamps := []int64{0, 1700000000000, -1, math.MaxInt64, math.MinInt64}
	out := make([]encode.Sample, n)
	for i := range out {
		it := item(fmt.Sprintf("s%d-%s", i, string(make([]byte, i%50))), 0, 0)
		out[i] = encode.Sample{Labels: it.Labels, Value: values[i%len(values)], Timestamp: stamps[i%len(stamps)]}
	}
	return out
}

func TestRecordRoundTrip(t *testing.T) {
	var s recordScratch
	var scratch []byte
	for _, n := range []int{1, 7, 2000} {
		in := recordSamplesFor(n)
		rec := s.encode(in)
		got, err := recordSamples(rec)
		require.NoError(t, err)
		require.Equal(t, n, got)

		prefix := []encode.Sample{{Value: 42}}
		out, err := decodeRecord(rec, &scratch, prefix)
		require.NoError(t, err)
		require.Len(t, out, n+1, "appended after dst")
		require.Equal(t, 42.0, out[0].Value)
		for i, want := range in {
			g := out[i+1]
			require.Equal(t, want.Labels, g.Labels, "sample %d", i)
			require.Equal(t, math.Float64bits(want.Value), math.Float64bits(g.Value), "sample %d: bits kept (stale marker)", i)
			require.Equal(t, want.Timestamp, g.Timestamp, "sample %d", i)
		}
		// The labels decode as the builder made them.
		ls, err := encode.DecodeLabels(out[n].Labels)
		require.NoError(t, err)
		require.Equal(t, encode.MetricName, ls[0].Name)
		// The record's body is the 1.0 request itself, which a disk lane
		// sends as it is (readBatch's stored).
		_, body, err := recordHeader(rec)
		require.NoError(t, err)
		require.Equal(t, (&encode.V1Encoder{}).Encode(nil, in), body)
	}
}

func TestRecordBad(t *testing.T) {
	var s recordScratch
	good := append([]byte(nil), s.encode(recordSamplesFor(3))...)
	bad := map[string][]byte{
		"empty":           {},
		"version":         append([]byte{2}, good[1:]...),
		"no count":        {recordVersion},
		"count too high":  append([]byte{recordVersion, 4}, good[2:]...),
		"count too low":   append([]byte{recordVersion, 2}, good[2:]...),
		"not snappy":      {recordVersion, 1, 0xff, 0xff, 0xff},
		"truncated body":  good[:len(good)-2],
		"not a request":   append([]byte{recordVersion, 1}, compressed([]byte{0x12, 0x01, 0x00})...),
		"no sample":       append([]byte{recordVersion, 1}, compressed([]byte{0x0a, 0x04, 0x0a, 0x02, 0x0a, 0x00})...),
		"no labels":       append([]byte{recordVersion, 1}, compressed([]byte{0x0a, 0x02, 0x12, 0x00})...),
		"short value":     append([]byte{recordVersion, 1}, compressed([]byte{0x0a, 0x09, 0x0a, 0x02, 0x0a, 0x00, 0x12, 0x03, 0x09, 0x01, 0x02})...),
		"two samples":     append([]byte{recordVersion, 1}, compressed([]byte{0x0a, 0x08, 0x0a, 0x02, 0x0a, 0x00, 0x12, 0x00, 0x12, 0x00})...),
		"length past end": append([]byte{recordVersion, 1}, compressed([]byte{0x0a, 0x7f})...),
	}
	for name, rec := range bad {
		t.Run(name, func(t *testing.T) {
			var scratch []byte
			out, err := decodeRecord(rec, &scratch, nil)
			require.ErrorIs(t, err, errRecord)
			require.Empty(t, out, "nothing appended")
		})
	}
}

// compressed snappy-compresses a hand-made request body.
func compressed(raw []byte) []byte {
	return encode.Compress(nil, raw)
}

// FuzzDecodeRecord: any bytes decode to an error or to samples, never a
// panic; what decodes re-encodes to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	var s recordScratch
	f.Add(append([]byte(nil), s.encode(recordSamplesFor(3))...))
	f.Add([]byte{recordVersion, 0})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var scratch []byte
		out, err := decodeRecord(rec, &scratch, nil)
		if err != nil {
			return
		}
		var again []byte
		out2, err := decodeRecord(s.encode(out), &again, nil)
		require.NoError(t, err)
		require.Len(t, out2, len(out))
	})
}
