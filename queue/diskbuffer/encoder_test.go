package diskbuffer

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// TestDeltaIsCompact checks that the delta forms are used: a removal's
// staleness markers refer to the removed set, a relabelled object stores
// its one new series, a value change its one value.
func TestDeltaIsCompact(t *testing.T) {
	const n = 40
	a := series(1, n, 0, func(int) float64 { return 1 })
	b := series(2, n, 0, func(int) float64 { return 1 })
	enc := newEncoder()
	require.NoError(t, enc.keyframe(&encode.Frame{Objects: []encode.Object{{Key: 1, Set: a}, {Key: 2, Set: b}}}, &recordList{}))

	size := func(f *encode.Frame) int {
		t.Helper()
		var out recordList
		require.NoError(t, enc.delta(f, &out))
		require.Len(t, out.recs, 1)
		_, body, err := splitRecord(out.recs[0])
		require.NoError(t, err)
		return len(body)
	}
	var literal int
	stale := make([]encode.Stale, n)
	for i := range stale {
		stale[i] = encode.Stale{Hash: b.Refs[i].Hash, Labels: b.Labels(i)}
		literal += 10 + len(stale[i].Labels)
	}
	got := size(&encode.Frame{Objects: []encode.Object{{Key: 1, Set: a}}, Stale: stale})
	require.Less(t, got, 3*n+20, "stale markers as references (%d bytes in full)", literal)

	a2 := series(1, n, 1, func(int) float64 { return 1 }) // series 0 relabelled
	got = size(&encode.Frame{Objects: []encode.Object{{Key: 1, Set: a2}}, Stale: []encode.Stale{{Hash: a.Refs[0].Hash, Labels: a.Labels(0)}}})
	require.Less(t, got, len(a2.Labels(0))+2*n+30, "one new series, the rest copies (%d bytes in full)", len(a2.Buf))

	c := a2.Clone()
	c.Refs[7].Value = math.Pi
	got = size(&encode.Frame{Objects: []encode.Object{{Key: 1, Set: &c}}})
	require.Less(t, got, 25, "one value: key, op, index, 9-byte value")
}
