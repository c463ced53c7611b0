package queue

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestExpanderKeepsSampleTimestamps: a set read from a kubelet carries its
// samples' own times to the endpoint; a state set, and the staleness
// markers, the snapshot's.
func TestExpanderKeepsSampleTimestamps(t *testing.T) {
	kub := testenv.KubeletSet("a", "b")
	kub.Timestamps = []int64{1000, 1500}
	var state encode.SeriesSet
	var b encode.LabelsBuilder
	b.Add(encode.MetricName, "kube_node_info")
	b.AppendTo(&state, 1)
	fr := encode.Frame{Timestamp: 9000,
		Objects: []encode.Object{{Key: 1, Set: kub}, {Key: 2, Set: &state}},
		Stale:   []encode.Stale{{Hash: 7, Labels: kub.Labels(0)}},
	}
	rec := &keepingAppender{}
	x := &expander{}
	require.Equal(t, 4, x.push(t.Context(), rec, &fr, nil))
	var got []int64
	for _, it := range rec.items {
		got = append(got, it.Timestamp)
	}
	require.Equal(t, []int64{1000, 1500, 9000, 9000}, got)
}

// Expander, the exported face of the expander, hands over what an endpoint
// would: every sample in chunks, the staleness markers, then one flush.
func TestExpanderExpandsLikeAnEndpoint(t *testing.T) {
	fr := labelledFrame(5000, 2*chunkSize+1)
	fr.Stale = append(fr.Stale, encode.Stale{Hash: 7, Labels: fr.Objects[0].Set.Labels(0)})
	var items []Item
	chunks, flushes := 0, 0
	var x Expander
	for range 2 { // scratch space reused between frames
		items, chunks, flushes = items[:0], 0, 0
		n := x.Expand(t.Context(), fr, func(_ context.Context, in []Item) int {
			require.Zero(t, flushes, "a flush comes after the last chunk")
			require.LessOrEqual(t, len(in), chunkSize)
			chunks++
			items = append(items, in...)
			return len(in)
		}, func() { flushes++ })
		require.Equal(t, 2*chunkSize+2, n)
		require.Len(t, items, n)
		require.Equal(t, 3, chunks)
		require.Equal(t, 1, flushes)
		last := items[len(items)-1]
		require.True(t, encode.IsStaleNaN(last.Value))
		require.Equal(t, uint64(7), last.Hash)
		require.Equal(t, int64(5000), last.Timestamp)
	}
}

// flushCounter is an endpoint that counts samples and end-of-frame
// flushes, and checks that a flush follows the frame's last sample.
type flushCounter struct {
	samples, flushes int
	// unflushed counts samples appended since the last flush.
	unflushed int
}

func (f *flushCounter) appendItems(_ context.Context, items []Item) int {
	f.samples += len(items)
	f.unflushed += len(items)
	return len(items)
}

func (f *flushCounter) flush() {
	f.flushes++
	f.unflushed = 0
}

// Every frame ends with a flush on the shards, through the relabeler too,
// after its last sample.
func TestExpanderFlushesEachFrame(t *testing.T) {
	plain, relabeled := &flushCounter{}, &flushCounter{}
	to := map[string]appender{"plain": plain, "relabeled": newRelabeler(relabeled, nil, slog.New(slog.DiscardHandler))}
	for name, app := range to {
		x := &expander{}
		for i := range 3 {
			fr := labelledFrame(int64(1000*(i+1)), 2*chunkSize+1)
			require.Positive(t, x.push(t.Context(), app, &fr.Frame, nil), name)
		}
	}
	for name, f := range map[string]*flushCounter{"plain": plain, "relabeled": relabeled} {
		require.Equal(t, 3, f.flushes, name)
		require.Positive(t, f.samples, name)
		require.Zero(t, f.unflushed, "%s: samples after the last flush", name)
	}
}
