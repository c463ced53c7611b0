package encode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// wireSeries is a prompb.TimeSeries in a form require.Equal can compare:
// sample values as bits, so that NaN (and the exact StaleNaN payload)
// compares equal to itself.
type wireSeries struct {
	Labels  []prompb.Label
	Samples []wireSample
}

type wireSample struct {
	Bits      uint64
	Timestamp int64
}

func toWire(t *testing.T, ts []prompb.TimeSeries) []wireSeries {
	t.Helper()
	out := make([]wireSeries, 0, len(ts))
	for _, s := range ts {
		require.Empty(t, s.Exemplars)
		require.Empty(t, s.Histograms)
		w := wireSeries{Labels: s.Labels}
		for _, smp := range s.Samples {
			w.Samples = append(w.Samples, wireSample{Bits: math.Float64bits(smp.Value), Timestamp: smp.Timestamp})
		}
		out = append(out, w)
	}
	return out
}

// decodeRequest snappy-decodes and unmarshals a request body.
func decodeRequest(t *testing.T, body []byte) prompb.WriteRequest {
	t.Helper()
	raw, err := snappy.Decode(nil, body)
	require.NoError(t, err)
	var wr prompb.WriteRequest
	require.NoError(t, wr.Unmarshal(raw))
	return wr
}

// prompbRequest is the WriteRequest prompb holds for samples: their labels
// decoded, and one sample each.
func prompbRequest(t testing.TB, samples []Sample) prompb.WriteRequest {
	t.Helper()
	var wr prompb.WriteRequest
	for _, s := range samples {
		ls, err := DecodeLabels(s.Labels)
		require.NoError(t, err)
		var pl []prompb.Label
		for _, l := range ls {
			pl = append(pl, prompb.Label{Name: l.Name, Value: l.Value})
		}
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: pl, Samples: []prompb.Sample{{Value: s.Value, Timestamp: s.Timestamp}}})
	}
	return wr
}

func lbls(kv ...string) []prompb.Label {
	out := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestAppendWriteRequestRoundTrip(t *testing.T) {
	type series struct {
		labels [][2]string // in the order they are added
		value  float64
	}
	tests := []struct {
		name     string
		external [][2]string
		series   []series
		ts       int64
		want     []wireSeries
	}{
		{
			name: "unsorted input is sorted with __name__ first",
			series: []series{{
				labels: [][2]string{{"pod", "p1"}, {"namespace", "ns"}, {"__name__", "kube_pod_info"}, {"Zeta", "z"}, {"_a", "x"}},
				value:  1,
			}},
			ts: 1700000000000,
			want: []wireSeries{{
				// Byte order: upper case sorts before "_", which sorts before
				// lower case; "__name__" comes first among "_" names.
				Labels:  lbls("Zeta", "z", "__name__", "kube_pod_info", "_a", "x", "namespace", "ns", "pod", "p1"),
				Samples: []wireSample{{Bits: math.Float64bits(1), Timestamp: 1700000000000}},
			}},
		},
		{
			name: "duplicate names keep the first added",
			series: []series{{
				labels: [][2]string{{"__name__", "m"}, {"b", "first"}, {"a", "1"}, {"b", "second"}, {"a", "2"}},
				value:  2.5,
			}},
			ts: 42,
			want: []wireSeries{{
				Labels:  lbls("__name__", "m", "a", "1", "b", "first"),
				Samples: []wireSample{{Bits: math.Float64bits(2.5), Timestamp: 42}},
			}},
		},
		{
			name: "empty values and names are left out",
			series: []series{{
				labels: [][2]string{{"__name__", "m"}, {"empty", ""}, {"", "noname"}, {"x", "y"}},
				value:  0,
			}},
			ts: 7,
			want: []wireSeries{{
				Labels:  lbls("__name__", "m", "x", "y"),
				Samples: []wireSample{{Bits: 0, Timestamp: 7}},
			}},
		},
		{
			name:     "external labels added unless present",
			external: [][2]string{{"cluster", "edge-1"}, {"namespace", "from-external"}, {"zone", "a"}},
			series: []series{
				{labels: [][2]string{{"__name__", "m"}, {"namespace", "own"}}, value: -1},
				{labels: [][2]string{{"__name__", "m"}}, value: math.Inf(1)},
			},
			ts: 1,
			want: []wireSeries{
				{
					Labels:  lbls("__name__", "m", "cluster", "edge-1", "namespace", "own", "zone", "a"),
					Samples: []wireSample{{Bits: math.Float64bits(-1), Timestamp: 1}},
				},
				{
					Labels:  lbls("__name__", "m", "cluster", "edge-1", "namespace", "from-external", "zone", "a"),
					Samples: []wireSample{{Bits: math.Float64bits(math.Inf(1)), Timestamp: 1}},
				},
			},
		},
		{
			name: "stale marker keeps its bits",
			series: []series{
				{labels: [][2]string{{"__name__", "m"}, {"pod", "gone"}}, value: StaleNaN},
				{labels: [][2]string{{"__name__", "m"}, {"pod", "nan"}}, value: math.NaN()},
			},
			ts: -5, // negative timestamps are valid int64s
			want: []wireSeries{
				{
					Labels:  lbls("__name__", "m", "pod", "gone"),
					Samples: []wireSample{{Bits: 0x7ff0000000000002, Timestamp: -5}},
				},
				{
					Labels:  lbls("__name__", "m", "pod", "nan"),
					Samples: []wireSample{{Bits: math.Float64bits(math.NaN()), Timestamp: -5}},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b LabelsBuilder
			var ext []Label
			for _, l := range tt.external {
				ext = append(ext, Label{Name: l[0], Value: l[1]})
			}
			b.SetExternal(ext)
			var set SeriesSet
			for _, s := range tt.series {
				b.Reset()
				for _, l := range s.labels {
					b.Add(l[0], l[1])
				}
				b.AppendTo(&set, s.value)
			}
			require.Equal(t, len(tt.series), set.Len())

			samples := make([]Sample, set.Len())
			for i := range samples {
				samples[i] = Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: tt.ts}
			}
			raw := AppendWriteRequest(nil, samples)
			wr := decodeRequest(t, Compress(nil, raw))
			require.Empty(t, wr.Metadata)
			require.Equal(t, tt.want, toWire(t, wr.Timeseries))

			// The stored labels decode to the same pairs.
			for i, w := range tt.want {
				got, err := DecodeLabels(set.Labels(i))
				require.NoError(t, err)
				require.Len(t, got, len(w.Labels))
				for j, l := range w.Labels {
					require.Equal(t, Label{Name: l.Name, Value: l.Value}, got[j])
				}
			}
		})
	}
}

func TestAppendWriteRequestAppends(t *testing.T) {
	var b LabelsBuilder
	var set SeriesSet
	b.Add(MetricName, "m")
	b.AppendTo(&set, 1)
	s := []Sample{{Labels: set.Labels(0), Value: 1, Timestamp: 1}}

	prefix := AppendWriteRequest(nil, s)
	both := AppendWriteRequest(append([]byte(nil), prefix...), s)
	require.Equal(t, prefix, both[:len(prefix)], "existing bytes are kept")

	var wr prompb.WriteRequest
	require.NoError(t, wr.Unmarshal(both))
	require.Len(t, wr.Timeseries, 2, "concatenated requests are one request with both series")

	require.Empty(t, AppendWriteRequest(nil, nil))
}

func TestCompressReusesDst(t *testing.T) {
	src := make([]byte, 4096)
	for i := range src {
		src[i] = byte(i % 7)
	}
	dst := make([]byte, 0, MaxCompressedLen(len(src)))
	got := Compress(dst, src)
	require.Same(t, &dst[:1][0], &got[:1][0], "dst's array is reused")
	plain, err := snappy.Decode(nil, got)
	require.NoError(t, err)
	require.Equal(t, src, plain)

	// A buffer that is too small is replaced.
	got = Compress(make([]byte, 0, 1), src)
	plain, err = snappy.Decode(nil, got)
	require.NoError(t, err)
	require.Equal(t, src, plain)
}

// Compress writes Snappy that golang/snappy, as receivers use it, reads
// back: a request of many times Snappy's 64 KiB block, whose copies reach
// further back than one block, and pseudo-random bytes.
func TestCompressIsSnappy(t *testing.T) {
	raw := AppendWriteRequest(nil, podSamples(t, 20_000))
	require.Greater(t, len(raw), 16<<16)
	noise := make([]byte, 100_000)
	for i := range noise {
		noise[i] = byte(i*7919 + i*i*104729>>11)
	}
	for _, src := range [][]byte{raw, noise, nil, []byte("x")} {
		got := Compress(nil, src)
		n, err := snappy.DecodedLen(got)
		require.NoError(t, err)
		require.Equal(t, len(src), n)
		plain, err := snappy.Decode(nil, got)
		require.NoError(t, err)
		require.True(t, bytes.Equal(src, plain))
	}
}

// A source larger than dst can hold whole is compressed a chunk at a time:
// dst grows to about the compressed length, not the source's, the result
// decodes to the source, and later calls reuse dst's array.
func TestCompressChunkedGrowsToCompressedLength(t *testing.T) {
	raw := AppendWriteRequest(nil, podSamples(t, 20_000))
	require.Greater(t, len(raw), 8*compressChunk)
	got := Compress(nil, raw)
	require.Less(t, cap(got), len(raw)/3, "dst grows to about the compressed length")
	plain, err := snappy.Decode(nil, got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(raw, plain))
	whole := Compress(make([]byte, 0, MaxCompressedLen(len(raw))), raw)
	require.LessOrEqual(t, float64(len(got)), 1.02*float64(len(whole)), "chunks cost at most 2% in size")

	// s2 itself may allocate (its pools), so the test is that dst keeps
	// its array, call after call.
	again := got
	for range 3 {
		again = Compress(again, raw)
		require.Same(t, &got[:1][0], &again[:1][0], "dst's array is reused")
	}
	plain, err = snappy.Decode(nil, again)
	require.NoError(t, err)
	require.True(t, bytes.Equal(raw, plain))
}

// AppendCompressed keeps what dst holds, in place when there is room and
// chunk by chunk when there is not, and grows a small dst by about what a
// small source needs.
func TestAppendCompressed(t *testing.T) {
	raw := AppendWriteRequest(nil, podSamples(t, 5_000))
	require.Greater(t, len(raw), 2*compressChunk)
	for _, src := range [][]byte{raw, raw[:100], nil} {
		for _, capacity := range []int{0, 3, 3 + MaxCompressedLen(len(src))} {
			dst := append(make([]byte, 0, capacity), "hdr"...)
			got := AppendCompressed(dst, src)
			require.Equal(t, "hdr", string(got[:3]))
			if capacity > 3 {
				require.Same(t, &dst[:1][0], &got[:1][0], "room enough: in dst's array")
			}
			plain, err := snappy.Decode(nil, got[3:])
			require.NoError(t, err)
			require.True(t, bytes.Equal(src, plain), "%d bytes, capacity %d", len(src), capacity)
			require.Less(t, cap(got), 3+MaxCompressedLen(len(src))+len(src)/2+64)
		}
	}
}

func TestLabelsHash(t *testing.T) {
	hash := func(t *testing.T, ext []Label, kv ...string) uint64 {
		t.Helper()
		var b LabelsBuilder
		b.SetExternal(ext)
		var set SeriesSet
		for i := 0; i < len(kv); i += 2 {
			b.Add(kv[i], kv[i+1])
		}
		b.AppendTo(&set, 0)
		return set.Refs[0].Hash
	}

	t.Run("order does not matter", func(t *testing.T) {
		h1 := hash(t, nil, "__name__", "m", "a", "1", "b", "2", "c", "3")
		h2 := hash(t, nil, "c", "3", "b", "2", "__name__", "m", "a", "1")
		require.Equal(t, h1, h2)
	})
	t.Run("external labels count like own labels", func(t *testing.T) {
		h1 := hash(t, []Label{{Name: "cluster", Value: "x"}}, "__name__", "m")
		h2 := hash(t, nil, "cluster", "x", "__name__", "m")
		require.Equal(t, h1, h2)
	})
	t.Run("empty values and duplicates do not count", func(t *testing.T) {
		h1 := hash(t, nil, "__name__", "m", "a", "1")
		h2 := hash(t, nil, "__name__", "m", "a", "1", "e", "", "a", "2")
		require.Equal(t, h1, h2)
	})
	t.Run("names and values are separated", func(t *testing.T) {
		require.NotEqual(t, hash(t, nil, "a", "bc"), hash(t, nil, "ab", "c"))
		// The separator is 0xff, a byte valid UTF-8 (which label names and
		// values must be) never holds.
		require.NotEqual(t, hash(t, nil, "a", "b", "c", "d"), hash(t, nil, "a", "bc", "d", ""))
	})
	t.Run("values matter", func(t *testing.T) {
		require.NotEqual(t, hash(t, nil, "a", "1"), hash(t, nil, "a", "2"))
	})
}

func TestDecodeLabelsErrors(t *testing.T) {
	var b LabelsBuilder
	var set SeriesSet
	b.Add(MetricName, "kube_pod_info")
	b.Add("namespace", "default")
	b.AppendTo(&set, 1)
	full := set.Labels(0)

	got, err := DecodeLabels(full)
	require.NoError(t, err)
	require.Equal(t, []Label{{Name: MetricName, Value: "kube_pod_info"}, {Name: "namespace", Value: "default"}}, got)

	t.Run("every truncation fails", func(t *testing.T) {
		// Cutting at a label boundary leaves valid (shorter) input; every
		// other cut must be reported, never panic.
		first := 2 + int(full[1])
		for n := 1; n < len(full); n++ {
			_, err := DecodeLabels(full[:n])
			if n == first {
				require.NoError(t, err, "cut at a label boundary")
				continue
			}
			require.Error(t, err, "cut at %d of %d", n, len(full))
		}
	})
	t.Run("unexpected tag", func(t *testing.T) {
		_, err := DecodeLabels([]byte{0x12, 0x00})
		require.ErrorContains(t, err, "unexpected tag")
	})
	t.Run("truncated varint", func(t *testing.T) {
		_, err := DecodeLabels([]byte{tagTimeSeriesLabels, 0x80})
		require.ErrorContains(t, err, "truncated")
	})
	t.Run("empty input", func(t *testing.T) {
		got, err := DecodeLabels(nil)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// podSamples returns n samples whose labels look like a pod container
// series (about 150 bytes of encoded labels each).
func podSamples(tb testing.TB, n int) []Sample {
	tb.Helper()
	var b LabelsBuilder
	var set SeriesSet
	for i := 0; i < n; i++ {
		b.Reset()
		b.Add(MetricName, "kube_pod_container_status_running")
		b.Add("namespace", "shop")
		b.Add("pod", fmt.Sprintf("checkout-6f9c-%05x", i))
		b.Add("container", "checkout")
		b.Add("uid", fmt.Sprintf("3f2b8c1e-9a4d-4e7b-8c6a-%012x", i))
		b.AppendTo(&set, float64(i%2))
	}
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1700000000000}
	}
	return out
}

// SeriesSize adds up to the request's length, with interned and shared
// references, zero values and timestamps, and staleness markers.
func TestSeriesSize(t *testing.T) {
	samples := podSamples(t, 300)
	samples[0].Value = 0
	samples[1].Timestamp = 0
	samples[2].Value = StaleNaN
	samples[3].Value, samples[3].Timestamp = math.Copysign(0, -1), 0
	total := 0
	for i := range samples {
		n := SeriesSize(&samples[i])
		require.Len(t, AppendWriteRequest(nil, samples[i:i+1]), n, "sample %d", i)
		total += n
	}
	require.Len(t, AppendWriteRequest(nil, samples), total)
	require.Zero(t, testing.AllocsPerRun(10, func() { SeriesSize(&samples[5]) }))
}

func BenchmarkSeriesSize(b *testing.B) {
	samples := podSamples(b, benchSamples)
	b.ReportAllocs()
	for b.Loop() {
		for i := range samples {
			SeriesSize(&samples[i])
		}
	}
	reportPerSample(b, len(samples))
}

func TestPodSamplesSize(t *testing.T) {
	s := podSamples(t, 1)
	require.InDelta(t, 150, len(s[0].Labels), 20, "benchmark series are realistic")
}

func TestAppendWriteRequestAllocs(t *testing.T) {
	samples := podSamples(t, 2000)
	buf := make([]byte, 0, len(AppendWriteRequest(nil, samples)))
	allocs := testing.AllocsPerRun(20, func() {
		buf = AppendWriteRequest(buf[:0], samples)
	})
	require.Zero(t, allocs)

	var b LabelsBuilder
	var set SeriesSet
	set.Buf = make([]byte, 0, 1024)
	set.Refs = make([]Ref, 0, 16)
	b.SetExternal([]Label{{Name: "cluster", Value: "edge-1"}})
	allocs = testing.AllocsPerRun(20, func() {
		set.Reset()
		b.Reset()
		b.Add(MetricName, "kube_pod_info")
		b.Add("pod", "p")
		b.Add("namespace", "ns")
		b.AppendTo(&set, 1)
	})
	require.Zero(t, allocs, "rendering into a set with room does not allocate")
}

const benchSamples = 2000

func reportPerSample(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sample")
}

func BenchmarkAppendWriteRequest(b *testing.B) {
	samples := podSamples(b, benchSamples)
	buf := AppendWriteRequest(nil, samples)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendWriteRequest(buf[:0], samples)
	}
	reportPerSample(b, len(samples))
}

func BenchmarkCompress(b *testing.B) {
	samples := podSamples(b, benchSamples)
	raw := AppendWriteRequest(nil, samples)
	dst := Compress(nil, raw)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Compress(dst, raw)
	}
	reportPerSample(b, len(samples))
	b.ReportMetric(float64(len(raw))/float64(len(dst)), "ratio")
}

// BenchmarkSnappyFloor is the compressor alone on the same bytes: the floor
// BenchmarkCompress is measured against.
func BenchmarkSnappyFloor(b *testing.B) {
	samples := podSamples(b, benchSamples)
	raw := AppendWriteRequest(nil, samples)
	var dst []byte
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Compress(dst, raw)
	}
	reportPerSample(b, len(samples))
}

// BenchmarkEncodeBatch is the whole send-time path of one batch: encode and
// compress into reused buffers.
func BenchmarkEncodeBatch(b *testing.B) {
	samples := podSamples(b, benchSamples)
	raw := AppendWriteRequest(nil, samples)
	dst := Compress(nil, raw)
	b.ReportAllocs()
	for b.Loop() {
		raw = AppendWriteRequest(raw[:0], samples)
		dst = Compress(dst, raw)
	}
	reportPerSample(b, len(samples))
}

// The sample bytes must be exactly what prompb marshals: the whole request
// equals prompb.WriteRequest.Marshal of the same series, byte for byte,
// across repeated, alternating and changing values and timestamps (NaN,
// stale marker, infinities, 0 and -0 among them, which compare equal as
// floats but not as bits; timestamps of 0, before 1970 and at the ends of
// int64).
func TestAppendWriteRequestMatchesPrompb(t *testing.T) {
	values := []float64{1, 1, 0, 0, math.Copysign(0, -1), 0, 1, math.NaN(), math.NaN(), StaleNaN, StaleNaN, 2.5, 1, 0, 1, 0, 1, 3, 1, math.Inf(1), math.Inf(-1), -7, 0, 1, 1, 0}
	stamps := []int64{5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 7, 7, 0, 8, 8, 8, 8, 8, 8, 1_700_000_000_000, 1_700_000_000_000, -1, -1, math.MaxInt64, math.MinInt64, 0}
	var samples []Sample
	var want prompb.WriteRequest
	for i, v := range values {
		var b LabelsBuilder
		var set SeriesSet
		b.Add(MetricName, "m")
		b.Add("i", strconv.Itoa(i))
		b.AppendTo(&set, v)
		samples = append(samples, Sample{Labels: set.Labels(0), Value: v, Timestamp: stamps[i]})
		want.Timeseries = append(want.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: MetricName, Value: "m"}, {Name: "i", Value: strconv.Itoa(i)}},
			Samples: []prompb.Sample{{Value: v, Timestamp: stamps[i]}},
		})
	}
	wantBytes, err := want.Marshal()
	require.NoError(t, err)
	require.Equal(t, wantBytes, AppendWriteRequest(nil, samples))
}

// formSamples are series in every form AppendWriteRequest writes: literal,
// interned and shared elements from 8 to 300 bytes (one- and two-byte
// lengths; sources with wideCopy bytes of capacity and without: the last
// elements of a set's shared region, or of labels that end their
// capacity), series under 128 bytes and over, values that proto3 leaves
// out (0, -0) and ones it keeps, and series with no labels, all with one
// timestamp.
func formSamples(t testing.TB) []Sample {
	t.Helper()
	var c Compactor
	var b LabelsBuilder
	var samples []Sample
	long := Intern("long", strings.Repeat("l", 90))
	values := []float64{0, math.Copysign(0, -1), 1, math.NaN(), StaleNaN, math.Inf(-1), 1e300, -3}
	for n := 0; n < 300; n += 7 {
		pod := "p" + strings.Repeat("o", n)
		set := c.Compact(podLikeSet(t, pod, false))
		lit := &SeriesSet{}
		b.Reset()
		name := fmt.Sprintf("kube_literal_%d", n)
		b.AddInterned(MetricName, name, Intern(MetricName, name))
		b.Add("a", "b")
		b.Add("v", strings.Repeat("v", n))
		if n%2 == 0 {
			b.AddInterned("long", strings.Repeat("l", 90), long)
		}
		b.AppendTo(lit, 1)
		for _, s := range []*SeriesSet{&set, lit} {
			for i := range s.Refs {
				samples = append(samples, Sample{Labels: s.Labels(i), Value: values[len(samples)%len(values)], Timestamp: 1_700_000_000_000})
			}
		}
		// The literal series again with no capacity past their bytes: an
		// element within wideCopy bytes of the end is copied exactly.
		exact := make([]byte, len(lit.Labels(0)))
		copy(exact, lit.Labels(0))
		samples = append(samples, Sample{Labels: exact, Value: 2, Timestamp: 1_700_000_000_000})
	}
	// No labels at all, nil and not.
	return append(samples, Sample{Value: 1, Timestamp: 1_700_000_000_000}, Sample{Labels: []byte{}, Timestamp: 1_700_000_000_000})
}

// TestAppendWriteRequestForms checks every form of series against prompb:
// at every room dst has (so that the wide copies run and do not), and with
// timestamps that change every few series.
func TestAppendWriteRequestForms(t *testing.T) {
	samples := formSamples(t)
	want := prompbRequest(t, samples)
	wantBytes, err := want.Marshal()
	require.NoError(t, err)
	for room := 0; room < 600; room += 13 {
		got := AppendWriteRequest(make([]byte, 0, room), samples)
		require.True(t, bytes.Equal(wantBytes, got), "room %d", room)
	}
	// Timestamps that change every few series, and a 0 one (left out).
	changing := append([]Sample(nil), samples...)
	for i := range changing {
		changing[i].Timestamp = int64(i/5) * 1_000
	}
	want = prompbRequest(t, changing)
	wantBytes, err = want.Marshal()
	require.NoError(t, err)
	require.True(t, bytes.Equal(wantBytes, AppendWriteRequest(nil, changing)), "changing timestamps")
}

// TestAppendWriteRequestRefusesBadLabels: label bytes the encoders refuse
// (TestBadReferencesDoNotParse's) panic in AppendWriteRequest, after a
// well-formed series, whether dst has room for the wide copies or not.
func TestAppendWriteRequestRefusesBadLabels(t *testing.T) {
	good := formSamples(t)[0]
	for _, b := range [][]byte{
		{refShared2, 0x05},
		{refShared2, 0x00},
		{refShared2, 0x01},
		{refInterned2 | 0x7f, 0xff},
		{refShared2},
		{refInterned2},
		{refShared2, 0x02},
		{tagTimeSeriesLabels, 0x05, 0x0a},
		{tagTimeSeriesLabels, 0x85, 0x01, 0x0a},
		{tagTimeSeriesLabels},
		{0x00, 0x00},
	} {
		labels := append(append([]byte{}, b...), make([]byte, 200)...)[:len(b)]
		samples := []Sample{good, {Labels: labels, Value: 1, Timestamp: good.Timestamp}}
		require.Panics(t, func() { AppendWriteRequest(nil, samples) }, "%x", b)
		require.Panics(t, func() { AppendWriteRequest(make([]byte, 0, 4096), samples) }, "%x", b)
	}
}

// TestAppendWriteRequestRefusesReferencesBeforeItsLabels: a shared
// reference whose distance goes back past the start of the labels'
// capacity panics rather than reading before it.
func TestAppendWriteRequestRefusesReferencesBeforeItsLabels(t *testing.T) {
	good := formSamples(t)[0]
	for _, dist := range []uint64{3, 64, 200, maxShared2 - 1} {
		labels := appendRef(make([]byte, 0, 2), refShared, dist)
		require.Len(t, labels, 2)
		samples := []Sample{good, {Labels: labels[:2:2], Value: 1, Timestamp: good.Timestamp}}
		require.Panics(t, func() { AppendWriteRequest(make([]byte, 0, 4096), samples) }, "distance %d", dist)
	}
}

// FuzzAppendWriteRequest feeds arbitrary bytes as series' labels to
// AppendWriteRequest, at several rooms in dst, and checks it against
// prompb: where the labels decode (DecodeLabels) and are in the form
// prompb writes them, the request is prompb.WriteRequest.Marshal's of the
// same samples, byte for byte; otherwise it panics or writes the same
// bytes at every room. The labels are the first n of the fuzzer's bytes,
// the rest their capacity, where shared references land.
func FuzzAppendWriteRequest(f *testing.F) {
	for _, s := range formSamples(f)[:40] {
		f.Add(append([]byte{}, s.Labels[:cap(s.Labels)]...), uint16(len(s.Labels)), math.Float64bits(s.Value), uint8(3))
	}
	f.Add([]byte{tagTimeSeriesLabels, 0x85, 0x01, 0x0a}, uint16(4), uint64(0), uint8(1))
	f.Fuzz(func(t *testing.T, buf []byte, n uint16, value uint64, count uint8) {
		labels := buf[:min(int(n), len(buf))]
		// Up to 8 series, the timestamp changing after the first half
		// when count's high bit is set.
		samples := make([]Sample, 1+int(count%8))
		for i := range samples {
			ts := int64(value >> 48)
			if count&0x80 != 0 && i >= len(samples)/2 {
				ts++
			}
			samples[i] = Sample{Labels: labels, Value: math.Float64frombits(value + uint64(i)), Timestamp: ts}
		}
		want, ok := prompbBytes(labels, samples)
		var first []byte
		var firstPanic bool
		for i, room := range []int{0, wideCopy, 4096} {
			got, panicked := tryAppend(func() []byte { return AppendWriteRequest(make([]byte, 0, room), samples) })
			switch {
			case ok && panicked:
				t.Fatalf("room %d: panics on labels prompb marshals", room)
			case ok && !bytes.Equal(want, got):
				t.Fatalf("room %d: AppendWriteRequest wrote\n%x\nprompb\n%x", room, got, want)
			case ok:
			case i == 0:
				first, firstPanic = got, panicked
			case panicked != firstPanic || !bytes.Equal(first, got):
				t.Fatalf("room %d: panics %v and writes\n%x\nat room 0 panics %v and writes\n%x", room, panicked, got, firstPanic, first)
			}
		}
	})
}

// prompbBytes is prompb's marshalling of the WriteRequest holding samples,
// all with labels; ok is false if labels do not decode or are not in the
// form prompb writes (proto3: fields in order, empty ones left out), which
// LabelsBuilder never makes.
func prompbBytes(labels []byte, samples []Sample) (b []byte, ok bool) {
	ls, err := DecodeLabels(labels)
	if err != nil {
		return nil, false
	}
	var pl []prompb.Label
	var canonical []byte
	for _, l := range ls {
		p := prompb.Label{Name: l.Name, Value: l.Value}
		b, err := p.Marshal()
		if err != nil {
			return nil, false
		}
		canonical = appendVarint(append(canonical, tagTimeSeriesLabels), uint64(len(b)))
		canonical = append(canonical, b...)
		pl = append(pl, p)
	}
	expanded, panicked := tryAppend(func() []byte { return AppendLabels(nil, labels) })
	if panicked || !bytes.Equal(canonical, expanded) {
		return nil, false
	}
	var wr prompb.WriteRequest
	for _, s := range samples {
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: pl, Samples: []prompb.Sample{{Value: s.Value, Timestamp: s.Timestamp}}})
	}
	b, err = wr.Marshal()
	return b, err == nil
}

// tryAppend runs f, reporting a panic instead of its bytes.
func tryAppend(f func() []byte) (b []byte, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

// V1Encoder writes a batch of many chunks as one valid request, holding no
// more than about a chunk of it uncompressed; RawLen is the whole
// request's length; and a reused dst gives a body at the start of its
// array, call after call.
func TestV1EncoderChunks(t *testing.T) {
	const chunk = 64 << 10
	for _, n := range []int{0, 1, encodeGroup, 20_000} {
		samples := podSamples(t, n)
		want := AppendWriteRequest(nil, samples)
		e := V1Encoder{chunk: chunk}
		body := e.Encode(nil, samples)
		plain, err := snappy.Decode(nil, body)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, plain), "%d samples", n)
		require.Equal(t, len(want), e.RawLen())
		require.Less(t, cap(e.raw), 2*chunk, "about a chunk of scratch")
		again := e.Encode(body, samples)
		require.Equal(t, body, again)
		if len(body) > 0 {
			require.Same(t, &body[:1][0], &again[:1][0], "dst's array is reused from its start")
		}
	}
}

// A request up to the default max_bytes_per_send is compressed whole:
// byte for byte what compressing the whole request at once gives, since
// chunks compressed apart cost bytes.
func TestV1EncoderCompressesWhole(t *testing.T) {
	samples := podSamples(t, 20_000)
	raw := AppendWriteRequest(nil, samples)
	require.Greater(t, len(raw), 8*compressChunk)
	require.Less(t, len(raw), requestChunk)
	whole := Compress(make([]byte, 0, MaxCompressedLen(len(raw))), raw)
	var e V1Encoder
	require.Equal(t, whole, e.Encode(nil, samples))
}
