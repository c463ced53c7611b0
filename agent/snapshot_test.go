package agent

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// A reload that rebuilds a resource gives its new maps metrics of their
// own over the same gauges. kube_state_push_series adds up the maps that
// are in the snapshot, retired ones included, and forgets those that are
// gone: it must not flap to what a retired map held, nor keep an entry per
// rebuild (a soak saw it read 0 for pods, now and then, after a reload).
func TestSeriesGaugeFollowsRebuiltResources(t *testing.T) {
	h := newHarness(t)
	old := h.addResource("pods")
	require.NoError(t, old.Add(testPod("ns", "a", "1")))
	h.snapshot()
	one := testutil.ToFloat64(h.m.series.WithLabelValues("pods"))
	require.Positive(t, one)

	for rebuild := range 5 {
		// The swap: the new maps hold two other pods, the old ones are
		// retired (in this snapshot for their markers, then dropped).
		fresh := h.addResource("pods")
		for k := range 2 {
			id := strconv.Itoa(10*rebuild + k)
			require.NoError(t, fresh.Add(testPod("ns", "p"+id, id)))
		}
		retire(old, nil)
		h.snapshot()
		two := testutil.ToFloat64(h.m.series.WithLabelValues("pods"))
		require.Equal(t, 2*one, two, "rebuild %d: old and new maps added up", rebuild)
		h.snap.maps = []*seriesMap{fresh}
		for tick := range 20 {
			h.snapshot()
			require.Equal(t, two, testutil.ToFloat64(h.m.series.WithLabelValues("pods")), "rebuild %d, tick %d", rebuild, tick)
		}
		require.Len(t, h.snap.perResource, 1, "one entry per resource watched")
		old = fresh
	}
}
