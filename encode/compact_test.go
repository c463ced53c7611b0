package encode

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/require"
)

// podLikeSet renders series the way a pod's families do: a name, identity
// labels every series carries, a container label several carry, an
// enumeration interned, trailers on some series and, if timed, timestamps.
func podLikeSet(t testing.TB, pod string, timed bool) *SeriesSet {
	t.Helper()
	var b LabelsBuilder
	b.SetExternal([]Label{{Name: "cluster", Value: "edge-7"}})
	set := &SeriesSet{}
	phase := Intern("phase", "Running")
	for i := range 12 {
		b.Reset()
		name := fmt.Sprintf("kube_pod_family_%d", i%5)
		b.AddInterned(MetricName, name, Intern(MetricName, name))
		b.Add("namespace", "default")
		b.Add("pod", pod)
		b.Add("uid", "3f1c2b9e-8a4d-4e1f-9b2c-"+pod)
		if i%2 == 0 {
			b.Add("container", "app-container")
		}
		if i%3 == 0 {
			b.AddInterned("phase", "Running", phase)
		}
		b.Add("unique", fmt.Sprintf("value-%d", i))
		b.AppendTo(set, float64(i))
		if i%4 == 1 {
			set.AppendTrailer("pod", pod)
			set.AppendTrailer("empty", "")
		}
		if timed {
			set.Timestamps = append(set.Timestamps, int64(1_700_000_000_000+i))
		}
	}
	return set
}

func TestCompactKeepsEverySeries(t *testing.T) {
	for _, timed := range []bool{false, true} {
		src := podLikeSet(t, "web-7d4b9c8f6d-x2k9p", timed)
		var c Compactor
		got := c.Compact(src)
		require.NotZero(t, got.Shared, "identity labels are shared")
		require.Less(t, len(got.Buf), len(src.Buf), "and take fewer bytes")
		require.Equal(t, len(got.Buf), cap(got.Buf), "exactly sized")
		require.Len(t, got.Refs, len(src.Refs))
		require.Equal(t, src.Timestamps, got.Timestamps)
		for i := range src.Refs {
			want, err := DecodeLabels(src.Labels(i))
			require.NoError(t, err)
			have, err := DecodeLabels(got.Labels(i))
			require.NoError(t, err)
			require.Equal(t, want, have, "series %d", i)
			require.Equal(t, AppendLabels(nil, src.Labels(i)), AppendLabels(nil, got.Labels(i)))
			require.Equal(t, src.Refs[i].Hash, got.Refs[i].Hash)
			h, ok := HashLabels(got.Labels(i))
			require.True(t, ok)
			require.Equal(t, src.Refs[i].Hash, h, "the hash of the compacted labels is the series'")
			require.Equal(t, src.Refs[i].Value, got.Refs[i].Value)
			require.Equal(t, src.Trailer(i), got.Trailer(i), "series %d's trailer", i)
			require.True(t, EqualLabels(src.Labels(i), got.Labels(i)))
		}
		// The literal form is what leaves the process.
		var lit SeriesSet
		l := got.Literal(&lit)
		require.Zero(t, l.Shared)
		for i := range l.Refs {
			require.True(t, IsLiteral(l.Labels(i)))
			require.Equal(t, AppendLabels(nil, src.Labels(i)), l.Labels(i))
			require.Equal(t, src.Trailer(i), l.Trailer(i))
		}
	}
}

func TestCompactedSetsEncodeAsLiteralOnes(t *testing.T) {
	var c Compactor
	var compact, literal []Sample

	for _, pod := range []string{"a", "web-7d4b9c8f6d-x2k9p", strings.Repeat("long-", 40)} {
		src := podLikeSet(t, pod, false)
		set := c.Compact(src)
		for i := range set.Refs {
			compact = append(compact, Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: 1})
			literal = append(literal, Sample{Labels: AppendLabels(nil, src.Labels(i)), Value: src.Refs[i].Value, Timestamp: 1})
		}
	}
	require.Equal(t, AppendWriteRequest(nil, literal), AppendWriteRequest(nil, compact), "Remote-Write 1.0 bytes")
	var v2a, v2b V2Encoder
	require.Equal(t, v2a.Encode(nil, literal), v2b.Encode(nil, compact), "Remote-Write 2.0 bytes")
	var w TextWriter
	for i := range compact {
		require.Equal(t, string(w.AppendSeries(nil, "m", &Layout{Generated: true}, literal[i].Labels, nil, nil, 1)),
			string(w.AppendSeries(nil, "m", &Layout{Generated: true}, compact[i].Labels, nil, nil, 1)))
	}
}

func TestAppendWriteRequestLengthBoundaries(t *testing.T) {
	// A series of under 128 bytes takes a one-byte length, one of 16 KiB
	// or more three: both move from the two bytes reserved.
	for _, n := range []int{1, 90, 120, 16_400, 70_000} {
		var b LabelsBuilder
		set := &SeriesSet{}
		b.Add(MetricName, "m")
		b.Add("v", strings.Repeat("x", n))
		b.AppendTo(set, 1)
		s := []Sample{{Labels: set.Labels(0), Value: 1, Timestamp: 5}, {Labels: set.Labels(0), Value: 2, Timestamp: 6}}
		wr, err := DecodeWriteRequest(Compress(nil, AppendWriteRequest(nil, s)))
		require.NoError(t, err, "labels of %d bytes", n)
		require.Len(t, wr.Timeseries, 2)
		require.Equal(t, strings.Repeat("x", n), wr.Timeseries[1].Labels[1].Value)
		require.Equal(t, 2.0, wr.Timeseries[1].Samples[0].Value)
	}
}

func TestEqualLabelsLooksThroughStorage(t *testing.T) {
	var c Compactor
	a := c.Compact(podLikeSet(t, "pod-aaaa", false))
	b := c.Compact(podLikeSet(t, "pod-bbbb", false))
	// Same length pods: the compact bytes are the same, the labels not.
	require.Equal(t, []byte(a.Labels(0)), []byte(b.Labels(0)))
	require.False(t, EqualLabels(a.Labels(0), b.Labels(0)))
	require.True(t, EqualLabels(a.Labels(0), AppendLabels(nil, a.Labels(0))))
	require.False(t, EqualLabels(a.Labels(0), a.Labels(1)))
	require.True(t, EqualLabels(nil, nil))
}

func TestBadReferencesDoNotParse(t *testing.T) {
	for _, b := range [][]byte{
		{refShared, 0x05},                 // past the start of the buffer
		{refShared, 0x00},                 // no distance
		{refInterned, 0xff, 0x7f},         // no such entry
		{refShared},                       // truncated
		{refShared, 0x01},                 // points at itself: not a label element
		{refShared2, 0x05},                // the two-byte forms: past the start
		{refShared2, 0x00},                // no distance
		{refInterned2 | 0x7f, 0xff},       // no such entry
		{refShared2},                      // truncated
		{refInterned2},                    // truncated
		{refShared2, 0x02},                // points at itself
		{tagTimeSeriesLabels, 0x05, 0x0a}, // a literal element longer than the bytes
		{tagTimeSeriesLabels},             // a literal element's tag alone
	} {
		_, _, _, ok := NextLabel(b)
		require.False(t, ok, "%x", b)
		require.False(t, IsLiteral(b))
		_, err := DecodeLabels(b)
		require.Error(t, err)
		require.Panics(t, func() { AppendLabels(nil, b) })
	}
}

func TestInternCappedStopsAtTheCap(t *testing.T) {
	old := internCap
	t.Cleanup(func() { internCap = old })
	first, ok := InternCapped("phase", "Pending")
	require.True(t, ok)
	interned.mu.Lock()
	internCap = len(interned.index) + 1
	interned.mu.Unlock()
	_, ok = InternCapped("reason", "a-new-one")
	require.True(t, ok, "room for one more")
	_, ok = InternCapped("reason", "and-another")
	require.False(t, ok, "the table is full")
	again, ok := InternCapped("phase", "Pending")
	require.True(t, ok, "what it holds is still found")
	require.Equal(t, first, again)
}

// A reference takes two bytes while its index or distance fits them, and a
// tag and a uvarint past that; the reader and the send path's expander both
// find the element either way, on either side of each bound.
func TestReferenceForms(t *testing.T) {
	table := make([][]byte, maxInterned2+100)
	for i := range table {
		table[i] = appendLabel(nil, Label{Name: "i", Value: strconv.Itoa(i)})
	}
	for _, v := range []uint64{0, 127, 128, 255, 256, maxInterned2 - 1, maxInterned2, maxInterned2 + 99} {
		ref := appendRef(nil, refInterned, v)
		require.Equal(t, v < maxInterned2, len(ref) == 2, "index %d: %x", v, ref)
		elem, n := resolve(ref, table)
		require.Equal(t, len(ref), n)
		require.Equal(t, table[v], elem, "index %d", v)
		require.Equal(t, table[v], appendExpanded(nil, ref, table), "index %d", v)
	}
	elem := appendLabel(nil, Label{Name: "pod", Value: "checkout-6f9c"})
	for _, v := range []uint64{uint64(len(elem)), 127, 128, 255, 256, maxShared2 - 1, maxShared2, 100_000} {
		ref := appendRef(nil, refShared, v)
		require.Equal(t, v < maxShared2, len(ref) == 2, "distance %d: %x", v, ref)
		// ref, some other bytes, then the element v bytes before the end.
		buf := append(append([]byte{}, ref...), make([]byte, 10)...)
		buf = append(buf, elem...)
		buf = append(buf, make([]byte, int(v)-len(elem))...)
		labels := buf[:len(ref):len(buf)]
		got, n := resolve(labels, nil)
		require.Equal(t, len(ref), n)
		require.Equal(t, elem, got, "distance %d", v)
		require.Equal(t, elem, appendExpanded(nil, labels, nil), "distance %d", v)
	}
}

// Sets read back from a disk buffer carry every label literal; compacted
// with Intern, each family name and each label the interned table holds
// becomes a two-byte reference to it again, so that the set is stored byte
// for byte as the rendered set it came from, and nothing about its series
// changes.
func TestCompactInternsLiteralNames(t *testing.T) {
	for _, timed := range []bool{false, true} {
		var lit SeriesSet
		rendered := podLikeSet(t, "web-7d4b9c8f6d-x2k9p", timed)
		src := rendered.Literal(&lit)
		require.True(t, hasLiteralName(src.Labels(0)))
		c := Compactor{Intern: true}
		got := c.Compact(src)
		var plain Compactor
		kept := plain.Compact(src)
		require.Greater(t, len(kept.Buf), len(got.Buf), "names interned only when asked")
		var again Compactor
		require.Equal(t, again.Compact(rendered).Buf, got.Buf, "stored as the rendered set is: names, the enumeration and the external label interned")
		for i := range src.Refs {
			require.False(t, hasLiteralName(got.Labels(i)), "series %d", i)
			want, err := DecodeLabels(src.Labels(i))
			require.NoError(t, err)
			have, err := DecodeLabels(got.Labels(i))
			require.NoError(t, err)
			require.Equal(t, want, have, "series %d", i)
			h, ok := HashLabels(got.Labels(i))
			require.True(t, ok)
			require.Equal(t, src.Refs[i].Hash, h)
			require.Equal(t, src.Refs[i].Value, got.Refs[i].Value)
			require.Equal(t, src.Trailer(i), got.Trailer(i), "series %d's trailer", i)
		}
		require.Equal(t, src.Timestamps, got.Timestamps)
	}

	// With nothing else to share, the set shrinks by each name's element
	// less its two-byte reference.
	var b LabelsBuilder
	var src SeriesSet
	saved := 0
	for i := range 5 {
		b.Reset()
		name := fmt.Sprintf("kube_state_push_read_back_%d", i)
		b.Add(MetricName, name)
		b.Add("unique", strconv.Itoa(i))
		b.AppendTo(&src, 1)
		saved += len(appendLabel(nil, Label{Name: MetricName, Value: name})) - 2
	}
	c := Compactor{Intern: true}
	got := c.Compact(&src)
	require.Zero(t, got.Shared)
	require.Equal(t, len(src.Buf)-saved, len(got.Buf))
	require.Equal(t, len(got.Buf), cap(got.Buf), "exactly sized")
	for i := range src.Refs {
		require.Equal(t, AppendLabels(nil, src.Labels(i)), AppendLabels(nil, got.Labels(i)))
	}

	// Bytes that do not parse, after a series that has a name, are left
	// as they are.
	bad := src.Clone()
	bad.Buf = append(bad.Buf, 0x0a, 0x7f)
	bad.Refs = append(bad.Refs, Ref{Off: uint32(len(bad.Buf) - 2), Len: 2})
	got = c.Compact(&bad)
	require.Equal(t, bad.Buf, got.Buf)
}

// hasLiteralName reports whether labels, with no shared references, hold a
// literal __name__ element.
func hasLiteralName(labels []byte) bool {
	for pos := 0; pos < len(labels); {
		l, literal := nextElem(labels[pos:], nil)
		if l == 0 {
			return false
		}
		if !literal {
			pos += l
			continue
		}
		if name, _, _, ok := NextLabel(labels[pos : pos+l]); ok && string(name) == MetricName {
			return true
		}
		pos += l
	}
	return false
}

// TestAppendWriteRequestAtEveryRoomLeft checks the encoder's two ways of
// writing, in place with fixed-size stores (room in dst, room in the
// source past the element) and by appending (neither), against prompb's
// own marshalling. Label elements run across the store sizes' bounds
// (16, 32 and 64 bytes), as literals, as shared references near the end
// of their set's buffer and as interned ones, and dst is given every amount
// of room around a series' length.
func TestAppendWriteRequestAtEveryRoomLeft(t *testing.T) {
	var c Compactor
	var samples []Sample
	for n := range 72 {
		pod := strings.Repeat("p", n+1)
		set := c.Compact(podLikeSet(t, pod, false))
		var b LabelsBuilder
		lit := &SeriesSet{}
		name := "kube_family_" + strings.Repeat("n", n)
		b.AddInterned(MetricName, name, Intern(MetricName, name))
		b.Add("v", strings.Repeat("v", 71-n))
		b.AppendTo(lit, 1)
		for _, s := range []*SeriesSet{&set, lit} {
			for i := range s.Refs {
				v, ts := s.Refs[i].Value, int64(1_700_000_000_000+n)
				if n%3 == 0 {
					v, ts = 0, 0 // the sample's fields left out
				}
				samples = append(samples, Sample{Labels: s.Labels(i), Value: v, Timestamp: ts})
			}
		}
	}
	want := prompbRequest(t, samples)
	wantBytes, err := want.Marshal()
	require.NoError(t, err)
	prefix := []byte("already there")
	for room := range 300 {
		dst := append(make([]byte, 0, len(prefix)+room), prefix...)
		got := AppendWriteRequest(dst, samples)
		require.Equal(t, prefix, got[:len(prefix)], "room %d: what dst held is kept", room)
		require.True(t, bytes.Equal(wantBytes, got[len(prefix):]), "room %d: the request is prompb's", room)
	}
	// Each sample alone, into a dst with only its own room and then less.
	for i, s := range samples {
		one, err := (&prompb.WriteRequest{Timeseries: want.Timeseries[i : i+1]}).Marshal()
		require.NoError(t, err)
		for _, room := range []int{len(one), len(one) - 1, len(one) - 20, len(one) + 63} {
			got := AppendWriteRequest(make([]byte, 0, max(room, 0)), []Sample{s})
			require.True(t, bytes.Equal(one, got), "sample %d, room %d", i, room)
		}
	}
}

// One Compactor compacts a set with more distinct shared labels than its
// table starts with (so the table doubles, several times, and is then
// made anew), and the small sets before and after it, each as a fresh
// Compactor would: the table's leftovers never make a label shared that a
// set does not repeat, nor miss one it does.
func TestCompactTableAcrossSets(t *testing.T) {
	big := &SeriesSet{}
	var b LabelsBuilder
	for i := range 3 * compactSlotsKeep {
		for k := range 2 { // each label on two series: worth sharing
			b.Reset()
			b.Add(MetricName, "kube_big")
			b.Add("key", fmt.Sprintf("value-number-%d", i))
			b.Add("k", strconv.Itoa(k))
			b.AppendTo(big, 1)
		}
	}
	reused := &Compactor{}
	for _, src := range []*SeriesSet{
		podLikeSet(t, "before-1", false), big, podLikeSet(t, "after-1", true),
		podLikeSet(t, "after-2", false), big, podLikeSet(t, "after-3", false),
	} {
		got := reused.Compact(src)
		fresh := (&Compactor{}).Compact(src)
		require.Equal(t, fresh.Buf, got.Buf)
		require.Equal(t, fresh.Refs, got.Refs)
		require.Equal(t, fresh.Shared, got.Shared)
		require.NotZero(t, got.Shared)
		for i := range src.Refs {
			require.Equal(t, AppendLabels(nil, src.Labels(i)), AppendLabels(nil, got.Labels(i)), "series %d", i)
		}
	}
	require.LessOrEqual(t, len(reused.slots), compactSlotsMin, "the big set's table is not kept")
}
