package encode

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// appendSeriesGo is the request appendSeries alone writes: what
// AppendWriteRequest wrote before appendSeriesFast, and still writes where
// haveFast is false.
func appendSeriesGo(dst []byte, samples []Sample) []byte {
	var ts sampleTime
	return appendSeries(dst, samples, internedElems(), &ts)
}

// fastFormSamples are series in every form appendSeriesFast writes itself:
// literal, interned and shared elements from 8 to 300 bytes (one- and
// two-byte lengths; sources with 64 bytes of capacity and without: the last
// elements of a set's shared region, or of labels that end their
// capacity), series under 128 bytes and over,
// values that proto3 leaves out (0, -0) and ones it keeps, and series with
// no labels, all with one timestamp.
func fastFormSamples(t testing.TB) []Sample {
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
		// element within 64 bytes of the end is copied exactly.
		exact := make([]byte, len(lit.Labels(0)))
		copy(exact, lit.Labels(0))
		samples = append(samples, Sample{Labels: exact, Value: 2, Timestamp: 1_700_000_000_000})
	}
	// No labels at all, nil and not.
	return append(samples, Sample{Value: 1, Timestamp: 1_700_000_000_000}, Sample{Labels: []byte{}, Timestamp: 1_700_000_000_000})
}

// TestAppendSeriesFastMatchesGo checks the assembly against the Go it
// stands for: on series of every form it takes, it writes each of them
// itself (so that the comparison is of its own bytes), the same bytes as
// appendSeries and prompb; and AppendWriteRequest, which hands it what it
// leaves, writes the same request at every room dst has and with
// timestamps that change.
func TestAppendSeriesFastMatchesGo(t *testing.T) {
	samples := fastFormSamples(t)
	want := prompbRequest(t, samples)
	wantBytes, err := want.Marshal()
	require.NoError(t, err)
	require.True(t, bytes.Equal(wantBytes, appendSeriesGo(nil, samples)), "appendSeries is prompb")

	if haveFast {
		// ts as the first sample leaves it, so that the rest all have
		// its timestamp.
		var ts sampleTime
		first := appendSeries(nil, samples[:1], internedElems(), &ts)
		dst := append(make([]byte, 0, 2*len(wantBytes)+fastRoom), first...)
		got, done := appendSeriesFast(dst, samples[1:], internedElems(), &ts)
		require.Equal(t, len(samples)-1, done, "every series in a form the assembly writes")
		require.True(t, bytes.Equal(wantBytes, got), "the assembly's bytes are prompb's")
	} else {
		t.Log("no appendSeriesFast here: AppendWriteRequest is appendSeries")
	}

	for room := 0; room < 600; room += 13 {
		got := AppendWriteRequest(make([]byte, 0, room), samples)
		require.True(t, bytes.Equal(wantBytes, got), "room %d", room)
	}
	// More samples than one call of the assembly takes (fastSpan).
	var many []Sample
	for len(many) <= 3*max(fastSpan, 1) {
		many = append(many, samples...)
	}
	require.True(t, bytes.Equal(appendSeriesGo(nil, many), AppendWriteRequest(nil, many)), "%d samples", len(many))
	// Timestamps that change every few series, and a 0 one (left out).
	changing := append([]Sample(nil), samples...)
	for i := range changing {
		changing[i].Timestamp = int64(i/5) * 1_000
	}
	require.True(t, bytes.Equal(appendSeriesGo(nil, changing), AppendWriteRequest(nil, changing)), "changing timestamps")
}

// TestAppendWriteRequestRefusesBadLabels: label bytes the encoders refuse
// (TestBadReferencesDoNotParse's) panic in AppendWriteRequest as in
// appendSeries, after a well-formed series and with room for the
// assembly's stores, so that it is the assembly that meets them first.
func TestAppendWriteRequestRefusesBadLabels(t *testing.T) {
	good := fastFormSamples(t)[0]
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
		require.Panics(t, func() { appendSeriesGo(nil, samples) }, "%x", b)
		require.Panics(t, func() { AppendWriteRequest(make([]byte, 0, 4096), samples) }, "%x", b)
	}
}

// FuzzAppendWriteRequest feeds arbitrary bytes as series' labels to
// AppendWriteRequest and to appendSeries alone, at several rooms in dst:
// both panic, or both write the same request. The labels are the first n
// of the fuzzer's bytes, the rest their capacity, where shared references
// land.
func FuzzAppendWriteRequest(f *testing.F) {
	for _, s := range fastFormSamples(f)[:40] {
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
		want, wantPanic := tryAppend(func() []byte { return appendSeriesGo(nil, samples) })
		for _, room := range []int{0, fastRoom, 4096} {
			got, gotPanic := tryAppend(func() []byte { return AppendWriteRequest(make([]byte, 0, room), samples) })
			if wantPanic || gotPanic {
				if wantPanic != gotPanic {
					t.Fatalf("room %d: appendSeries panics %v, AppendWriteRequest %v", room, wantPanic, gotPanic)
				}
				continue
			}
			if !bytes.Equal(want, got) {
				t.Fatalf("room %d: AppendWriteRequest wrote\n%x\nappendSeries\n%x", room, got, want)
			}
		}
	})
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
