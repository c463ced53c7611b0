package queue

import (
	"log/slog"
	"sync"
	"time"
)

// dropAtShutdown counts n samples the shard gave up on because the send
// context was cancelled after the stop deadline; Stop logs the total.
func (e *Endpoint) dropAtShutdown(n int) {
	if n == 0 {
		return
	}
	e.metrics.dropped[ReasonShutdown].Add(float64(n))
	e.shutdownDrops.Add(int64(n))
}

// dropLog logs dropped batches at most once per reason per interval, with
// how many were dropped silently since.
type dropLog struct {
	// mu guards last and silent.
	mu sync.Mutex
	// every is the shortest interval between two lines of one reason.
	every time.Duration
	// last is when each reason was last logged.
	last map[string]time.Time
	// silent counts batches dropped without a log line, per reason.
	silent map[string]int
	// kept logs batches kept in the disk buffer (a warning) instead of
	// dropped ones (an error).
	kept bool
}

func (d *dropLog) log(l *slog.Logger, reason string, n int, err error) {
	d.mu.Lock()
	if d.last == nil {
		d.last, d.silent = map[string]time.Time{}, map[string]int{}
	}
	now := time.Now()
	if t, ok := d.last[reason]; ok && now.Sub(t) < d.every {
		d.silent[reason]++
		d.mu.Unlock()
		return
	}
	d.last[reason] = now
	silent := d.silent[reason]
	d.silent[reason] = 0
	d.mu.Unlock()
	if d.kept {
		l.Warn("retries ended: keeping the batch in the disk buffer and trying again", "samples", n, "batches_kept_since_last_log", silent, "err", err)
		return
	}
	l.Error("dropping batch", "reason", reason, "samples", n, "batches_dropped_since_last_log", silent, "err", err)
}
