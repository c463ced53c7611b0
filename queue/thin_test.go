package queue

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// thinBase is the timestamp of the first frame of the thinning tests.
const thinBase = int64(1_700_000_000_000)

// thinScript is the value of each series in frame i (one second apart),
// ok false where the series is absent; a series present in frame i-1 and
// absent in frame i ends with a staleness marker in frame i.
var thinScript = map[string]func(i int) (float64, bool){
	"steady":  func(int) (float64, bool) { return 1, true },
	"step":    func(i int) (float64, bool) { return float64(1 + i/12), true }, // changes at frame 12 and 24
	"late":    func(i int) (float64, bool) { return 7, i >= 9 },               // starts at 9
	"ends":    func(i int) (float64, bool) { return 3, i < 17 },               // marker at 17
	"flap":    func(i int) (float64, bool) { return 1, i < 5 || i >= 7 },      // marker at 5, starts again at 7, same value
	"counter": func(i int) (float64, bool) { return float64(i / 3), true },    // a change every third frame
	"bulk-0":  func(int) (float64, bool) { return 5, true },
	"bulk-1":  func(int) (float64, bool) { return 5, true },
	"bulk-2":  func(int) (float64, bool) { return 5, true },
	"bulk-3":  func(int) (float64, bool) { return 5, true },
}

// thinSeries is a series of thinScript: its labels and hash.
type thinSeries struct {
	name   string
	labels []byte
	hash   uint64
}

// thinFrames builds frames 0..n-1 of thinScript, one object per series,
// and the samples full resolution sends of them.
func thinFrames(n int) ([]*Frame, []gotSample) {
	names := make([]string, 0, len(thinScript))
	for name := range thinScript {
		names = append(names, name)
	}
	sort.Strings(names)
	var series []thinSeries
	for _, name := range names {
		it := item(name, 0, 0)
		series = append(series, thinSeries{name: name, labels: it.Labels, hash: it.Hash})
	}
	var frames []*Frame
	var full []gotSample
	for i := range n {
		f := &Frame{}
		f.refs.Store(1)
		f.Timestamp = thinBase + int64(i)*1000
		for k, s := range series {
			v, ok := thinScript[s.name](i)
			if !ok {
				if _, was := thinScript[s.name](i - 1); was && i > 0 {
					f.Stale = append(f.Stale, encode.Stale{Hash: s.hash, Labels: s.labels})
					full = append(full, gotSample{series: s.name, value: encode.StaleNaN, ts: f.Timestamp})
				}
				continue
			}
			set := &encode.SeriesSet{Buf: append([]byte(nil), s.labels...)}
			set.Refs = []encode.Ref{{Len: uint32(len(s.labels)), Hash: s.hash, Value: v}}
			f.Objects = append(f.Objects, encode.Object{Key: uint64(k + 1), Set: set})
			full = append(full, gotSample{series: s.name, value: v, ts: f.Timestamp})
		}
		frames = append(frames, f)
	}
	return frames, full
}

// isStale reports whether v is a staleness marker.
func isStale(v float64) bool { return math.Float64bits(v) == math.Float64bits(encode.StaleNaN) }

// instant answers an instant query for every series at t as Prometheus
// does with a lookback of lookback: the newest sample in (t-lookback, t],
// none if it is a staleness marker.
func instant(samples []gotSample, t, lookback int64) map[string]float64 {
	newest := map[string]gotSample{}
	for _, s := range samples {
		if s.ts > t || s.ts <= t-lookback {
			continue
		}
		if old, ok := newest[s.series]; !ok || s.ts > old.ts {
			newest[s.series] = s
		}
	}
	out := map[string]float64{}
	for name, s := range newest {
		if !isStale(s.value) {
			out[name] = s.value
		}
	}
	return out
}

// A backlog replayed through the disk buffer with backfill_resolution:
// every change point arrives at its snapshot (a value change, a start, a
// start again after a staleness marker, the marker), unchanged samples of
// old frames are left out and counted, frames newer than
// backfill_full_resolution_within arrive in full, and an instant query at
// any time over the backlog, with a lookback of the resolution, answers
// what full resolution answers. Both backfill orders.
func TestThinnedBacklog(t *testing.T) {
	for _, order := range []string{BackfillOldestFirst, BackfillNewestFirst} {
		t.Run(order, func(t *testing.T) { testThinnedBacklog(t, order) })
	}
}

func testThinnedBacklog(t *testing.T, order string) {
	const frames = 30
	// A step that is not a whole number of intervals: a frame in full
	// every 5 s would leave series 5 s without a sample.
	const res, within = 4500 * time.Millisecond, 5 * time.Second
	var down atomic.Bool
	down.Store(true)
	srv := newRecorder(t, func(int, *http.Request) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	cfg := DefaultConfig
	cfg.URL, cfg.Name = srv.URL, testEndpoint
	cfg.DiskBuffer.Directory = t.TempDir()
	cfg.Backfill = order
	cfg.BackfillResolution, cfg.BackfillFullResolutionWithin, cfg.BackfillLookbackDelta = res, within, res
	cfg.QueueConfig.MinBackoff, cfg.QueueConfig.MaxBackoff = time.Millisecond, 10*time.Millisecond
	cfg.QueueConfig.MaxRetryDuration = 20 * time.Millisecond
	require.NoError(t, cfg.Validate())
	m := NewMetrics(prometheus.NewRegistry())
	e, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Metrics: m, FramesWaiting: func() int { return 100 }})
	require.NoError(t, err)
	require.NotNil(t, e.feed.thin)
	now := thinBase + (frames-1)*1000
	e.feed.thin.now = func() time.Time { return time.UnixMilli(now) }
	e.Start()

	fs, full := thinFrames(frames)
	for _, f := range fs {
		e.Offer(f)
	}
	require.Eventually(t, func() bool { return e.disk.log.Stats().Appended == frames }, 10*time.Second, time.Millisecond)
	down.Store(false)
	require.Eventually(t, func() bool { return gaugeOf(t, m, "queue_length") == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, stop(t, e, 10*time.Second))
	requireNoDrops(t, m)

	got := srv.got()
	type key struct {
		series string
		ts     int64
	}
	sent := map[key]float64{}
	for _, s := range got {
		_, dup := sent[key{s.series, s.ts}]
		require.False(t, dup, "%s at %d sent once", s.series, s.ts)
		sent[key{s.series, s.ts}] = s.value
	}
	thinned := testutil.ToFloat64(m.buffer.thinned.WithLabelValues(testEndpoint))
	require.Equal(t, float64(len(full)-len(got)), thinned, "every sample left out is counted")
	require.Positive(t, thinned, "unchanged samples are left out")
	require.Equal(t, float64(len(got)), counter(t, m.samplesSent))

	// Every change point is sent, at its snapshot.
	last := map[string]gotSample{}
	for _, s := range full {
		prev, seen := last[s.series]
		last[s.series] = s
		if seen && !isStale(prev.value) && !isStale(s.value) && prev.value == s.value {
			continue
		}
		v, ok := sent[key{s.series, s.ts}]
		require.True(t, ok, "the change point of %s at frame %d is sent", s.series, (s.ts-thinBase)/1000)
		require.Equal(t, math.Float64bits(s.value), math.Float64bits(v))
	}
	// Frames newer than within are sent in full; frames that are sent in
	// full are at most a step apart.
	perFrame := map[int64]int{}
	for _, s := range full {
		perFrame[s.ts]++
	}
	gotPerFrame := map[int64]int{}
	for _, s := range got {
		gotPerFrame[s.ts]++
	}
	var fullFrames []int64
	for i := range frames {
		ts := thinBase + int64(i)*1000
		if gotPerFrame[ts] == perFrame[ts] {
			fullFrames = append(fullFrames, ts)
		}
		if now-ts <= within.Milliseconds() {
			require.Equal(t, perFrame[ts], gotPerFrame[ts], "frame %d is newer than within: in full", i)
		}
	}
	for i := 1; i < len(fullFrames); i++ {
		require.LessOrEqual(t, fullFrames[i]-fullFrames[i-1], res.Milliseconds(), "full frames a step apart at most: %v", fullFrames)
	}
	require.Less(t, len(fullFrames), frames, "some frames are thinned")

	// Instant queries answer alike, at every 100 ms over the backlog and a
	// lookback beyond it.
	for at := thinBase - 1000; at <= now+res.Milliseconds()+1000; at += 100 {
		require.Equal(t, instant(full, at, res.Milliseconds()), instant(got, at, res.Milliseconds()), "instant query at +%dms", at-thinBase)
	}
	t.Logf("%d of %d samples sent, %g left out; frames in full: %d of %d", len(got), len(full), thinned, len(fullFrames), frames)
}

// The thinner's choices: a frame goes in full when nothing is known, when
// nothing follows it, after a gap of more than a step, and when the next
// frame would fall more than a step after the last frame in full.
func TestThinnerFull(t *testing.T) {
	th := newThinner(&Config{BackfillResolution: 5 * time.Second}, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}))
	require.Equal(t, int64(5000), th.within, "within defaults to the resolution")
	fr := func(ts int64) *encode.Frame { return &testFrame(ts, []uint64{1, 2}).Frame }
	require.True(t, th.full(fr(1000), 2000, true), "nothing known yet")
	th.sentFull(fr(1000))
	require.False(t, th.full(fr(2000), 3000, true))
	require.True(t, th.full(fr(2000), 0, false), "nothing follows")
	require.True(t, th.full(fr(7000), 8000, true), "after a gap of more than a step")
	require.True(t, th.full(fr(500), 1500, true), "behind the frame before")
	require.False(t, th.full(fr(5000), 6000, true), "the next one is a step after the last in full")
	require.True(t, th.full(fr(5000), 6001, true), "the next one would be past a step")
	th.forget()
	require.Nil(t, th.last, "a healthy endpoint keeps no map")
	require.True(t, th.full(fr(2000), 3000, true), "nothing known after frames sent without the thinner")
	require.Nil(t, newThinner(&Config{}, nil), "off by default")
}

// In the steady state, thinning a frame allocates nothing.
func TestPushThinnedAllocs(t *testing.T) {
	th := newThinner(&Config{BackfillResolution: 5 * time.Second}, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}))
	fr := labelledFrame(1000, 1000)
	th.sentFull(&fr.Frame)
	var x expander
	app := &funcAppender{add: func(_ context.Context, items []Item) int { return len(items) }, done: func() {}}
	var thinned int
	// app is a pointer, as the endpoint is: a struct would be boxed.
	allocs := testing.AllocsPerRun(20, func() {
		_, _, thinned = x.pushThinned(t.Context(), app, &fr.Frame, th)
	})
	require.Zero(t, allocs)
	require.Equal(t, 1000, thinned, "every sample unchanged")
}

// BenchmarkPushThinned measures thinning a frame of unchanged series.
func BenchmarkPushThinned(b *testing.B) {
	th := newThinner(&Config{BackfillResolution: 5 * time.Second}, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}))
	fr := labelledFrame(1000, 10000)
	th.sentFull(&fr.Frame)
	var x expander
	app := &funcAppender{add: func(_ context.Context, items []Item) int { return len(items) }, done: func() {}}
	b.ReportAllocs()
	for b.Loop() {
		x.pushThinned(b.Context(), app, &fr.Frame, th)
	}
}
