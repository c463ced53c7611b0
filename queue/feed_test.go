package queue

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// blockingAppender takes nothing until released, like an endpoint whose
// memory queue is full; then it records what it gets.
type blockingAppender struct {
	// release is closed to let Append return.
	release chan struct{}
	// mu guards got and flushes.
	mu      sync.Mutex
	got     []Item
	flushes int
}

func (b *blockingAppender) appendItems(ctx context.Context, items []Item) int {
	select {
	case <-b.release:
	case <-ctx.Done():
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, items...)
	return len(items)
}

func (b *blockingAppender) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushes++
}

// byTimestamp returns the values of series hash h by timestamp.
func (b *blockingAppender) byTimestamp() map[int64]map[uint64]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[int64]map[uint64]float64{}
	for _, it := range b.got {
		if out[it.Timestamp] == nil {
			out[it.Timestamp] = map[uint64]float64{}
		}
		out[it.Timestamp][it.Hash] = it.Value
	}
	return out
}

// drops counts the feed's drops by reason.
type drops struct {
	mu sync.Mutex
	n  map[string]int
	// newest makes the feed send the newest waiting frame first.
	newest bool
}

func (d *drops) count(reason string, samples int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[reason] += samples
}

// feed returns a feed to app, in memory, counting its drops in d.
func (d *drops) feed(app appender, limit int) *feed {
	f := newFeed(app, d.count, func() int { return limit })
	f.newestFirst = d.newest
	return f
}

func (d *drops) get(reason string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[reason]
}

// testFrame is a frame at ts with one object holding series of the given
// hashes (value = ts), and the given ended series.
func testFrame(ts int64, live []uint64, ended ...uint64) *Frame {
	set := &encode.SeriesSet{}
	for _, h := range live {
		off := uint32(len(set.Buf))
		set.Buf = append(set.Buf, byte(h))
		set.Refs = append(set.Refs, encode.Ref{Off: off, Len: 1, Hash: h, Value: float64(ts)})
	}
	f := &Frame{}
	f.refs.Store(1)
	f.Timestamp = ts
	f.Objects = []encode.Object{{Key: 1, Set: set}}
	for _, h := range ended {
		f.Stale = append(f.Stale, encode.Stale{Hash: h, Labels: []byte{byte(h)}})
	}
	return f
}

// The snapshot loop never waits for an endpoint: a feed whose endpoint takes
// nothing keeps the newest frames, drops the oldest whole (counted as
// queue_full), and still ends the series that ended in a dropped frame.
func TestFeedDropsWholeOldestFrames(t *testing.T) {
	app := &blockingAppender{release: make(chan struct{})}
	d := &drops{}
	f := d.feed(app, 2)
	f.start()

	// Frame 1 is taken by the goroutine (blocked in Append); 2 and 3
	// wait; 4 and 5 push out 2 and 3. Series 9 ends in frame 2, series 8
	// in frame 3 and is back in frame 5.
	offered := make(chan struct{})
	go func() {
		defer close(offered)
		f.offer(testFrame(1, []uint64{7, 8, 9}))
		require.Eventually(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return len(f.pending) == 0
		}, 5*time.Second, time.Millisecond, "the goroutine takes frame 1")
		f.offer(testFrame(2, []uint64{7, 8}, 9))
		f.offer(testFrame(3, []uint64{7}, 8))
		f.offer(testFrame(4, []uint64{7}))
		f.offer(testFrame(5, []uint64{7, 8}))
	}()
	select {
	case <-offered:
	case <-time.After(10 * time.Second):
		t.Fatal("offer blocked while the endpoint took nothing")
	}
	require.Equal(t, 2+1, d.get(ReasonQueueFull), "frames 2 and 3 dropped whole, their live samples counted")

	close(app.release)
	require.Zero(t, f.stop(context.Background()))
	got := app.byTimestamp()
	require.Len(t, got, 3, "frames 1, 4 and 5 pushed")
	require.Equal(t, map[uint64]float64{7: 1, 8: 1, 9: 1}, got[1])
	require.Len(t, got[4], 3, "frame 4: its series and the markers of 9 and 8, carried from dropped frames 2 and 3")
	require.True(t, math.IsNaN(got[4][9]) && encode.IsStaleNaN(got[4][9]))
	require.Equal(t, 4.0, got[4][7])
	_, has8 := got[4][8]
	require.True(t, has8, "8 ended in dropped frame 3: marked in frame 4")
	require.True(t, encode.IsStaleNaN(got[4][8]))
	require.Equal(t, map[uint64]float64{7: 5, 8: 5}, got[5], "back in frame 5: live, no marker")
	require.Equal(t, 3, app.flushes, "every pushed frame ends with a flush")
}

// A carried marker of a series that is live again in the next frame pushed
// is left out, and one that also ended in it is sent once.
func TestFeedCarriedMarkersOnce(t *testing.T) {
	x := &expander{}
	fr := testFrame(10, []uint64{1}, 2)
	carry := []encode.Stale{{Hash: 1, Labels: []byte{1}}, {Hash: 2, Labels: []byte{2}}, {Hash: 3, Labels: []byte{3}}, {Hash: 3, Labels: []byte{3}}}
	got := x.stillEnded(&fr.Frame, carry)
	require.Equal(t, []uint64{3}, slices.Collect(func(yield func(uint64) bool) {
		for _, s := range got {
			if !yield(s.Hash) {
				return
			}
		}
	}))
}

// Stop is bounded by its context while the endpoint takes nothing: the
// frame being pushed and those waiting are counted as shutdown.
func TestFeedStopDeadline(t *testing.T) {
	app := &blockingAppender{release: make(chan struct{})}
	d := &drops{}
	f := d.feed(app, 10)
	f.start()
	for ts := range int64(3) {
		f.offer(testFrame(ts, []uint64{1, 2}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	f.stop(ctx)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, 6, d.get(ReasonShutdown), "3 frames of 2 samples")
	f.offer(testFrame(9, []uint64{1}))
	require.Equal(t, 6, d.get(ReasonShutdown), "a stopped feed takes nothing")
}

// With backfill: newest_first and no disk buffer, the newest frame waiting
// goes first, then the older ones, oldest first.
func TestFeedNewestFirstMemory(t *testing.T) {
	app := &blockingAppender{release: make(chan struct{})}
	d := &drops{newest: true}
	f := d.feed(app, 10)
	f.start()
	f.offer(testFrame(1, []uint64{1}))
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.pending) == 0
	}, 5*time.Second, time.Millisecond, "the goroutine takes frame 1")
	for ts := int64(2); ts <= 5; ts++ {
		f.offer(testFrame(ts, []uint64{1}))
	}
	close(app.release)
	require.Zero(t, f.stop(context.Background()))
	var order []int64
	for _, it := range app.got {
		order = append(order, it.Timestamp)
	}
	require.Equal(t, []int64{1, 5, 2, 3, 4}, order)
}

// labelledFrame is a frame at ts of n series with real encoded labels
// (value ts), one object.
func labelledFrame(ts int64, n int) *Frame {
	var b encode.LabelsBuilder
	set := &encode.SeriesSet{}
	for i := range n {
		b.Add(encode.MetricName, "test_metric")
		b.Add("series", strconv.Itoa(i))
		b.AppendTo(set, float64(ts))
	}
	f := &Frame{}
	f.refs.Store(1)
	f.Timestamp = ts
	f.Objects = []encode.Object{{Key: 1, Set: set}}
	return f
}

// With backfill: newest_first and a disk buffer, once the receiver is back
// the newest snapshot arrives ahead of the backlog, which follows in order,
// every snapshot exactly once.
func TestFeedNewestFirstDiskBuffer(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var arrived []int64 // the timestamp of every accepted sample, in order
	seen := map[int64]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		req, err := encode.DecodeWriteRequest(body)
		require.NoError(t, err)
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		for _, ts := range req.Timeseries {
			arrived = append(arrived, ts.Samples[0].Timestamp)
			seen[ts.Samples[0].Timestamp]++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := DefaultConfig
	cfg.URL, cfg.Name = srv.URL, "newest"
	cfg.DiskBuffer.Directory = t.TempDir()
	cfg.Backfill = BackfillNewestFirst
	cfg.QueueConfig.MinBackoff, cfg.QueueConfig.MaxBackoff = time.Millisecond, 10*time.Millisecond
	cfg.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	require.NoError(t, cfg.Validate())
	q, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry()),
		FramesWaiting: func() int { return 100 }})
	require.NoError(t, err)
	f := q.feed
	q.Start()

	const series = 3
	for ts := int64(1); ts <= 10; ts++ {
		f.offer(labelledFrame(ts, series))
	}
	// The receiver comes back once all ten are on disk: earlier, the
	// replayer could catch up before the newest is written, which then
	// rightly goes in order, last.
	require.Eventually(t, func() bool { return q.disk.log.Stats().Appended == 10 }, 10*time.Second, time.Millisecond, "ten snapshots written")
	require.True(t, q.behind(), "a backlog on disk")
	down.Store(false)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 10
	}, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Zero(t, f.stop(ctx))
	require.NoError(t, q.Stop(ctx))

	mu.Lock()
	defer mu.Unlock()
	for ts := int64(1); ts <= 10; ts++ {
		require.Equal(t, series, seen[ts], "snapshot %d once", ts)
	}
	// After the newest snapshot, what is left of the backlog follows, in
	// order; and some of it does follow (it was not all sent first).
	first := map[int64]int{}
	var order []int64
	for i, ts := range arrived {
		if _, ok := first[ts]; !ok {
			first[ts] = i
			order = append(order, ts)
		}
	}
	after := order[slices.Index(order, 10)+1:]
	require.NotEmpty(t, after, "older snapshots follow the newest: %v", order)
	require.True(t, slices.IsSorted(after), "the backlog in order after it: %v", order)
}
