package queue

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Thinning a backlog (backfill_resolution).
//
// State series are step functions of the API's state: a series keeps its
// value from one change to the next, and an instant query at time t
// answers the newest sample of each series within the lookback before t
// (its staleness marker ends it). So a backlog replayed from the disk
// buffer may leave out a sample that repeats the one sent before it, as
// long as every live series keeps a sample at most one lookback apart. The
// thinner sends a frame in full at least every backfill_resolution, and of
// the frames between only the change points of each series: its first
// sample (it starts, or starts again after its staleness marker), a value
// that differs from the one sent before, and every staleness marker, at
// the snapshot where it happened.
//
// Reasoning behind the frames sent in full: take a query at t and the
// newest frame F at or before t that holds a series. Full resolution
// answers F's value if F is within the lookback. Thinned, the newest
// sample of the series at or before t has the same value (every change is
// sent) and is not older than the newest full frame at or before F. The
// replayer reads one frame ahead, and sends a frame in full when the frame
// after it would fall more than a step after the last one in full (or
// when nothing follows it yet), so that t, which is before the frame after
// F, is less than a step after that full frame: within the lookback when
// the step is. So a frame after a gap of more than a step goes in full,
// and series that ended in frames the size cap deleted are known again;
// so does a frame behind the one before it.
//
// Frames newer than backfill_full_resolution_within go in full, and the
// thinner keeps nothing for them: the first old frame after them goes in
// full. An endpoint that keeps up pays nothing per series. While thinning,
// it holds one map entry per live series (its hash and the bits of its
// value last sent), refilled at every full frame, so series whose markers
// were lost leave it within a step.

// thinner decides which samples of a disk buffer's backlog are sent; only
// the replayer uses it.
type thinner struct {
	// res and within are backfill_resolution and
	// backfill_full_resolution_within in milliseconds.
	res, within int64
	now         func() time.Time
	// last holds the bits of each live series' value last sent, by hash,
	// while valid.
	last map[uint64]uint64
	// valid is set while last is what the receiver has of the frames
	// replayed so far.
	valid bool
	// lastFull is the timestamp of the last frame sent in full while
	// valid; prev that of the last frame replayed.
	lastFull, prev int64
	// thinned counts the samples left out.
	thinned prometheus.Counter
}

// newThinner returns the thinner of an endpoint with backfill_resolution,
// or nil without.
func newThinner(cfg *Config, thinned prometheus.Counter) *thinner {
	if cfg.BackfillResolution <= 0 {
		return nil
	}
	within := cfg.BackfillFullResolutionWithin
	if within <= 0 {
		within = cfg.BackfillResolution
	}
	return &thinner{res: cfg.BackfillResolution.Milliseconds(), within: within.Milliseconds(), now: time.Now, thinned: thinned}
}

// old reports whether fr is old enough to be thinned.
func (t *thinner) old(fr *encode.Frame) bool {
	return t.now().UnixMilli()-fr.Timestamp > t.within
}

// full reports whether fr, an old frame, goes in full: next is the
// timestamp of the frame after it, if hasNext.
func (t *thinner) full(fr *encode.Frame, next int64, hasNext bool) bool {
	if !t.valid || !hasNext || fr.Timestamp <= t.prev || next < fr.Timestamp {
		return true // timestamps out of order: nothing to thin against
	}
	// A frame after a gap of more than a step passes this too.
	return next-t.lastFull > t.res
}

// sentFull says that the receiver has fr in full: it is what later frames
// are thinned against.
func (t *thinner) sentFull(fr *encode.Frame) {
	if t.last == nil {
		t.last = make(map[uint64]uint64, fr.Samples())
	}
	clear(t.last)
	for _, o := range fr.Objects {
		for i := range o.Set.Refs {
			r := &o.Set.Refs[i]
			t.last[r.Hash] = math.Float64bits(r.Value)
		}
	}
	t.valid, t.lastFull, t.prev = true, fr.Timestamp, fr.Timestamp
}

// forget says a frame went in full without the thinner: nothing is kept
// until the next old frame, which then goes in full.
func (t *thinner) forget() {
	t.valid = false
	t.last = nil // a healthy endpoint keeps no map
}

// changed reports whether a sample of the series hash with value v is a
// change point, to be sent, and notes it as sent.
func (t *thinner) changed(hash uint64, v float64) bool {
	bits := math.Float64bits(v)
	if old, ok := t.last[hash]; ok && old == bits {
		return false
	}
	t.last[hash] = bits
	return true
}

// ended notes the series hash's staleness marker: a sample of it after
// that is a start.
func (t *thinner) ended(hash uint64) { delete(t.last, hash) }

// thinnedFrame says fr was sent thinned, skipping n samples.
func (t *thinner) thinnedFrame(fr *encode.Frame, n int) {
	t.prev = fr.Timestamp
	if n > 0 {
		t.thinned.Add(float64(n))
	}
}
