package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/queue"
)

// flushCounter is an endpoint that counts samples and end-of-snapshot
// flushes, and checks that a flush follows the snapshot's last sample.
type flushCounter struct {
	samples, flushes int
	// unflushed counts samples appended since the last flush.
	unflushed int
}

func (f *flushCounter) Append(_ context.Context, items []queue.Item) int {
	f.samples += len(items)
	f.unflushed += len(items)
	return len(items)
}

func (f *flushCounter) Flush() {
	f.flushes++
	f.unflushed = 0
}

// Every tick reaches each endpoint, which flushes after its last sample (the
// relabeler passing the flush on is tested in queue); a held snapshot (a
// follower's) reaches none.
func TestSnapshotFlushesEndpoints(t *testing.T) {
	plain, other := &flushCounter{}, &flushCounter{}
	s := benchSnapshotter(t, 10, 2, plain)
	s.sinks = append(s.sinks, syncSinks(other)...)
	for i := range 3 {
		n := s.tick(time.UnixMilli(int64(1000 * (i + 1))))
		require.Positive(t, n)
	}
	for name, f := range map[string]*flushCounter{"plain": plain, "other": other} {
		require.Equal(t, 3, f.flushes, name)
		require.Positive(t, f.samples, name)
		require.Zero(t, f.unflushed, "%s: samples after the last flush", name)
	}
	s.hold = func() bool { return true }
	require.Zero(t, s.tick(time.UnixMilli(4000)), "a held snapshot sends nothing")
	require.Equal(t, 3, plain.flushes, "a held snapshot passes nothing on")
}
