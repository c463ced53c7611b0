package queue

import (
	"math"
	"time"
)

// Resharding follows Prometheus' remote-write queue manager
// (storage/remote/queue_manager.go, calculateDesiredShards and
// shouldReshard): every reshardInterval the rates of samples in, out and
// dropped, and the time spent sending, are folded into moving averages; the
// shards needed to send what comes in, plus 5 % of the backlog per second,
// is the send time per sample times that rate. Changes within 30 % are
// ignored, the count never shrinks while the queue is more than 10 s behind,
// and nothing changes while requests are being retried (more shards would
// only press harder on a receiver that is failing or rate limiting) or when
// nothing was sent in the last interval.
const (
	// reshardInterval is how often the shard count is reconsidered.
	reshardInterval = 10 * time.Second
	// ewmaWeight is the weight of the newest interval in the moving
	// averages.
	ewmaWeight = 0.2
	// shardTolerance is the dead band: a desired count within this
	// fraction of the current one changes nothing.
	shardTolerance = 0.3
	// backlogCatchUp is the fraction of the backlog the shards should send
	// per second on top of what comes in.
	backlogCatchUp = 0.05
	// maxDelayToShrink is how far behind (seconds between the newest
	// sample queued and the newest sent) the queue may be and still shrink.
	maxDelayToShrink = 10.0
)

// ewmaRate is an exponentially weighted moving average of a per-second
// rate, fed once per interval. It is not safe for concurrent use: the
// resharding loop owns it.
type ewmaRate struct {
	// rate is the current average, per second.
	rate float64
	// init is set once a non-zero interval has been seen; until then the
	// first such interval's rate is taken as is.
	init bool
}

// tick folds in the events of one interval.
func (r *ewmaRate) tick(events float64, interval time.Duration) {
	instant := events / interval.Seconds()
	switch {
	case r.init:
		r.rate += ewmaWeight * (instant - r.rate)
	case events > 0:
		r.init = true
		r.rate = instant
	}
}

// shardLoad is what an endpoint measured over one resharding interval.
type shardLoad struct {
	// In is the number of samples queued.
	In float64
	// Out is the number of samples the receiver accepted.
	Out float64
	// Dropped is the number of samples given up on.
	Dropped float64
	// SendTime is the time spent sending, summed over the shards (two
	// shards busy for the whole interval count twice the interval).
	SendTime time.Duration
	// Delay is how far behind the queue is: the newest queued sample's
	// timestamp minus the newest sent one's, in seconds.
	Delay float64
	// Retried is set when any request was retried after a recoverable
	// error during the interval.
	Retried bool
}

// resharder decides the shard count from the moving averages of the
// endpoint's load. It is not safe for concurrent use.
type resharder struct {
	// min and max bound the count (queue_config.min_shards, max_shards).
	min, max int
	// interval is the time between two calls of next.
	interval time.Duration
	// in, out, dropped and sendTime are the moving averages of shardLoad's
	// fields, per second (sendTime in seconds per second).
	in, out, dropped, sendTime ewmaRate
}

// newResharder returns a resharder for counts between lo and hi, called
// every interval.
func newResharder(lo, hi int, interval time.Duration) *resharder {
	return &resharder{min: lo, max: hi, interval: interval}
}

// next folds in one interval's load and returns the desired shard count as
// computed (before rounding, the dead band and the bounds; NaN when there
// is not yet anything to compute it from) and the count to run with: cur
// when nothing should change.
func (r *resharder) next(cur int, l shardLoad) (desired float64, n int) {
	r.in.tick(l.In, r.interval)
	r.out.tick(l.Out, r.interval)
	r.dropped.tick(l.Dropped, r.interval)
	r.sendTime.tick(l.SendTime.Seconds(), r.interval)

	inRate, outRate := r.in.rate, r.out.rate
	if outRate <= 0 {
		return math.NaN(), cur
	}
	kept := outRate / (outRate + r.dropped.rate)
	delay := max(l.Delay, 0)
	pending := delay * inRate * kept
	timePerSample := r.sendTime.rate / outRate
	desired = timePerSample * (inRate*kept + backlogCatchUp*pending)

	// Nothing moves while retrying, nor when nothing got through in the
	// last interval: the receiver, not the shard count, is the bottleneck.
	if l.Retried || l.Out == 0 {
		return desired, cur
	}
	want := math.Ceil(desired)
	if float64(cur)*(1-shardTolerance) <= want && want <= float64(cur)*(1+shardTolerance) {
		return desired, cur
	}
	n = int(min(want, float64(r.max))) // min first: want may be huge
	if n < cur && delay > maxDelayToShrink {
		return desired, cur
	}
	n = max(min(n, r.max), r.min)
	return desired, n
}
