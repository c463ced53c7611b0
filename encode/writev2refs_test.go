package encode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
)

// compactedSamples returns the samples of n compacted pod-like sets
// (podLikeSet): interned family names and enumeration values, labels
// shared by each pod's series, literal ones, and trailers behind some.
func compactedSamples(t testing.TB, n int) []Sample {
	t.Helper()
	var c Compactor
	var out []Sample
	for p := range n {
		set := c.Compact(podLikeSet(t, fmt.Sprintf("web-%05d", p), false))
		for i := range set.Refs {
			out = append(out, Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1_700_000_000_000})
		}
	}
	return out
}

// requireV2RoundTrip decodes a 2.0 body and checks it against the
// samples it was encoded from: every series' labels (references
// followed), value and timestamp, its family's metadata from md, and the
// bytes writev2.Request.Marshal gives for what was decoded.
func requireV2RoundTrip(t *testing.T, body []byte, samples []Sample, md MetadataFunc) {
	t.Helper()
	raw, err := snappy.Decode(nil, body)
	require.NoError(t, err)
	req := decodeV2(t, body)
	require.Len(t, req.Timeseries, len(samples))
	for i, s := range samples {
		want, err := DecodeLabels(s.Labels)
		require.NoError(t, err)
		ts := req.Timeseries[i]
		require.Zero(t, len(ts.LabelsRefs)%2)
		var got []Label
		for j := 0; j < len(ts.LabelsRefs); j += 2 {
			got = append(got, Label{Name: req.Symbols[ts.LabelsRefs[j]], Value: req.Symbols[ts.LabelsRefs[j+1]]})
		}
		require.Equal(t, want, got, "series %d", i)
		require.Len(t, ts.Samples, 1)
		if s.Value == 0 { // -0 too, which proto3 leaves out like 0
			require.Zero(t, ts.Samples[0].Value, "series %d", i)
		} else {
			require.Equal(t, math.Float64bits(s.Value), math.Float64bits(ts.Samples[0].Value), "series %d", i)
		}
		require.Equal(t, s.Timestamp, ts.Samples[0].Timestamp, "series %d", i)
		var name string
		for _, l := range want {
			if l.Name == MetricName {
				name = l.Value
			}
		}
		if m, ok := md(name); ok {
			require.Equal(t, v2Type(m.Type), ts.Metadata.Type, "series %d", i)
			require.Equal(t, m.Help, req.Symbols[ts.Metadata.HelpRef], "series %d", i)
			require.Equal(t, m.Unit, req.Symbols[ts.Metadata.UnitRef], "series %d", i)
		} else {
			require.Zero(t, ts.Metadata.Type, "series %d", i)
			require.Zero(t, ts.Metadata.HelpRef, "series %d", i)
		}
	}
	again, err := req.Marshal()
	require.NoError(t, err)
	require.Equal(t, again, raw, "the bytes writev2.Request.Marshal writes")
}

// familyMetadata knows the families of podLikeSet but one.
func familyMetadata(name string) (Metadata, bool) {
	switch name {
	case "kube_pod_family_0":
		return Metadata{Type: TypeGauge, Help: "Family 0."}, true
	case "kube_pod_family_1":
		return Metadata{Type: TypeGauge, Help: "Family 1."}, true
	case "kube_pod_family_2":
		return Metadata{Type: TypeCounter, Help: "Seconds.", Unit: "seconds"}, true
	case "kube_pod_family_3":
		return Metadata{Type: TypeInfo}, true
	}
	return Metadata{}, false
}

// TestV2EncoderManyObjects encodes the compacted sets of hundreds of pods
// in one request, so that the tables a request fills (shared labels by
// address, symbols) grow several times, in the sets' order and shuffled
// (no series has the labels of the one before it), request after request
// with one encoder: each request decodes to its samples.
func TestV2EncoderManyObjects(t *testing.T) {
	samples := compactedSamples(t, 400)
	shuffled := append([]Sample(nil), samples...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	e := &V2Encoder{Metadata: familyMetadata}
	for round := range 2 {
		for name, batch := range map[string][]Sample{
			"in order": samples,
			"shuffled": shuffled,
			"a few":    samples[len(samples)-30:],
			"one":      shuffled[:1],
		} {
			t.Run(fmt.Sprintf("%s/%d", name, round), func(t *testing.T) {
				requireV2RoundTrip(t, e.Encode(nil, batch), batch, familyMetadata)
				require.Equal(t, (&V2Encoder{Metadata: familyMetadata}).Encode(nil, batch), e.Encode(nil, batch), "a reused encoder writes what a fresh one does")
			})
		}
	}
}

// TestV2EncoderLongSeries covers lengths past one varint byte: series
// with a hundred labels (their refs, and the series, take over 127
// bytes), symbols past 127 bytes, and refs over two varint bytes.
func TestV2EncoderLongSeries(t *testing.T) {
	var b LabelsBuilder
	var set SeriesSet
	for i := range 200 {
		b.Reset()
		b.Add(MetricName, "kube_pod_family_2")
		labels := 3
		if i%10 == 0 {
			labels = 100
		}
		for j := range labels {
			b.Add(fmt.Sprintf("label_%03d", j), fmt.Sprintf("value-%d-%d", i, j))
		}
		if i%7 == 0 {
			b.Add("long", strings.Repeat("x", 200+i))
		}
		b.AppendTo(&set, float64(i))
	}
	samples := make([]Sample, set.Len())
	for i := range samples {
		samples[i] = Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: int64(i)}
	}
	requireV2RoundTrip(t, (&V2Encoder{Metadata: familyMetadata}).Encode(nil, samples), samples, familyMetadata)
}

// TestV2EncoderWideRefs sends labels whose refs' varints do not fit
// labelRefs.enc the other way (V2Encoder.wide), which real requests take
// only past millions of symbols: with maxEnc lowered, every label with a
// ref of two varint bytes does.
func TestV2EncoderWideRefs(t *testing.T) {
	defer func(n int) { maxEnc = n }(maxEnc)
	maxEnc = 2
	for _, samples := range [][]Sample{compactedSamples(t, 100), podFamilySamples(t, 500)} {
		e := &V2Encoder{Metadata: familyMetadata}
		body := e.Encode(nil, samples)
		require.NotEmpty(t, e.wide, "some labels took the wide path")
		requireV2RoundTrip(t, body, samples, familyMetadata)
	}
}

// TestV2EncoderCompactedAllocs is TestV2EncoderAllocs on compacted sets,
// the form the series map keeps: once warm, finding labels by address and
// index allocates nothing either.
func TestV2EncoderCompactedAllocs(t *testing.T) {
	a := compactedSamples(t, 200)
	b := compactedSamples(t, 50)
	e := &V2Encoder{Metadata: familyMetadata}
	var dst []byte
	for range 2 {
		dst = e.Encode(dst, a)
		dst = e.Encode(dst, b)
	}
	allocs := testing.AllocsPerRun(10, func() {
		dst = e.Encode(dst, a)
		dst = e.Encode(dst, b)
	})
	require.Zero(t, allocs)
}

// FuzzV2Encoder feeds arbitrary bytes as series' labels to the 2.0
// encoder, as FuzzAppendWriteRequest does to the 1.0 one: where the labels
// are in the form prompb writes, the request round-trips through
// writev2's decoding and marshalling (requireV2RoundTrip), and an encoder
// reused after another request writes what a fresh one does; otherwise it
// may panic. The labels are the first n of the fuzzer's bytes, the rest
// their capacity, where shared references land.
func FuzzV2Encoder(f *testing.F) {
	for _, s := range formSamples(f)[:40] {
		f.Add(append([]byte{}, s.Labels[:cap(s.Labels)]...), uint16(len(s.Labels)), math.Float64bits(s.Value), uint8(3))
	}
	reused := &V2Encoder{Metadata: familyMetadata}
	other := compactedSamples(f, 3)
	f.Fuzz(func(t *testing.T, buf []byte, n uint16, value uint64, count uint8) {
		labels := buf[:min(int(n), len(buf))]
		samples := make([]Sample, 1+int(count%8))
		for i := range samples {
			samples[i] = Sample{Labels: labels, Value: math.Float64frombits(value + uint64(i)), Timestamp: int64(value >> 48)}
		}
		body, panicked := tryAppend(func() []byte { return (&V2Encoder{Metadata: familyMetadata}).Encode(nil, samples) })
		if _, ok := prompbBytes(labels, samples); !ok {
			return
		}
		require.False(t, panicked, "panics on labels prompb marshals")
		requireV2RoundTrip(t, body, samples, familyMetadata)
		reused.Encode(nil, other)
		require.Equal(t, body, reused.Encode(nil, samples), "a reused encoder writes what a fresh one does")
	})
}
