package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A follower's snapshots are held back; the series that ended meanwhile get
// their staleness marker in its first snapshot as leader, unless they are
// back or ended longer ago than the query lookback.
func TestHeldSnapshotsKeepEndedSeries(t *testing.T) {
	h := newHarness(t)
	pods := h.addResource("pods")
	require.NoError(t, pods.Add(testPod("ns", "a", "1")))
	require.NoError(t, pods.Add(testPod("ns", "b", "2")))
	require.NoError(t, pods.Add(testPod("ns", "c", "3")))
	first := h.snapshot()
	require.NotEmpty(t, first.live)

	held := true
	h.snap.hold = func() bool { return held }
	require.NoError(t, pods.Delete(testPod("ns", "a", "1")))
	require.Empty(t, h.snapshot().live, "held: nothing sent")
	// b ends, then comes back before the replica leads.
	require.NoError(t, pods.Delete(testPod("ns", "b", "2")))
	h.snapshot()
	require.NoError(t, pods.Add(testPod("ns", "b", "2")))
	h.snapshot()

	held = false
	got := h.snapshot()
	require.NotEmpty(t, got.stale)
	for _, s := range got.stale {
		require.Contains(t, s, `pod="a"`, "only a's series end")
	}
	for s := range got.live {
		require.NotContains(t, s, `pod="a"`)
	}

	// A series that ended more than the lookback before the replica leads
	// gets no marker: queries no longer return it anyway.
	held = true
	require.NoError(t, pods.Delete(testPod("ns", "c", "3")))
	h.snapshot()
	h.now = h.now.Add(staleLookback + time.Minute)
	h.snapshot()
	held = false
	require.Empty(t, h.snapshot().stale)
}
