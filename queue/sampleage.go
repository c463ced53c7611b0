package queue

import (
	"fmt"
	"math"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
)

// queue_config.sample_age_limit, as in Prometheus' queue manager: a sample
// older than the limit when its batch is about to be sent is not sent but
// counted as dropped (too_old), since the receiver would refuse it anyway
// (a TSDB head takes samples about an hour behind its newest, see
// prometheus/tsdb/head_append.go) or it would only
// clutter a catch-up after an outage. Memory-only shards apply it to every
// batch and, while a batch is retried, once more when its oldest sample
// passes the limit (the retries end then, and what is left is sent anew);
// disk-buffered shards to every batch they read and to every new try of a batch kept
// after its retries ended.

// tooOld reports whether a sample taken at ts (ms) is past limit at now.
// A sample exactly limit old is too old, so that a batch whose retries
// ended at its oldest sample's deadline always loses that sample.
func tooOld(ts int64, now time.Time, limit time.Duration) bool {
	return !now.Before(time.UnixMilli(ts).Add(limit))
}

// dropTooOld returns the samples of batch that are not past
// sample_age_limit at now, counting the others as too_old; with no limit,
// or nothing too old, it is batch itself. It never writes to batch.
func (e *Endpoint) dropTooOld(batch []encode.Sample, now time.Time) []encode.Sample {
	limit := e.cfg.QueueConfig.SampleAgeLimit
	if limit <= 0 {
		return batch
	}
	first := -1
	for i := range batch {
		if tooOld(batch[i].Timestamp, now, limit) {
			first = i
			break
		}
	}
	if first < 0 {
		return batch
	}
	fresh := make([]encode.Sample, first, len(batch)-1)
	copy(fresh, batch[:first])
	for i := first + 1; i < len(batch); i++ {
		if !tooOld(batch[i].Timestamp, now, limit) {
			fresh = append(fresh, batch[i])
		}
	}
	n := len(batch) - len(fresh)
	e.metrics.dropped[ReasonTooOld].Add(float64(n))
	e.load.dropped.Add(int64(n))
	e.drops.log(e.log, ReasonTooOld, n, fmt.Errorf("samples older than queue_config.sample_age_limit %s", limit))
	return fresh
}

// ageDeadline is when the oldest sample of batch passes sample_age_limit:
// the retries of a request of it end then. Zero without a limit.
func (e *Endpoint) ageDeadline(batch []encode.Sample) time.Time {
	limit := e.cfg.QueueConfig.SampleAgeLimit
	if limit <= 0 || len(batch) == 0 {
		return time.Time{}
	}
	oldest := int64(math.MaxInt64)
	for i := range batch {
		oldest = min(oldest, batch[i].Timestamp)
	}
	return time.UnixMilli(oldest).Add(limit)
}
