package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/config"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Options are what an Endpoint needs beyond its Config.
type Options struct {
	// Logger receives the endpoint's logs.
	Logger *slog.Logger
	// Metrics are shared by all endpoints of the agent.
	Metrics *Metrics
	// UserAgent is sent with every request.
	UserAgent string
}

// Item is one sample to send, with the hash of its labels that picks its
// shard.
type Item struct {
	encode.Sample
	// Hash is the series' label hash (encode.Ref.Hash).
	Hash uint64
}

// Endpoint delivers samples to one remote_write URL through a fixed set of
// shards.
type Endpoint struct {
	// cfg is the endpoint's validated configuration.
	cfg Config
	// log has the endpoint's name attached.
	log *slog.Logger
	// metrics are this endpoint's self-metrics.
	metrics *endpointMetrics
	// sender posts batches.
	sender *sender
	// shards each hold a ring and send serially.
	shards []*shard
	// staging holds one scratch list per shard for Append, reused between
	// calls; only the single producer touches it.
	staging [][]encode.Sample
	// drops rate-limits the log lines about dropped batches.
	drops dropLog

	// sendCtx is the context of in-flight requests; cancelSend ends them
	// after the stop deadline.
	sendCtx    context.Context
	cancelSend context.CancelFunc
	// wg tracks the shard goroutines.
	wg sync.WaitGroup
	// shutdownDrops counts the samples the shards dropped because the send
	// context was cancelled (in flight or taken at the stop deadline), so
	// that Stop reports them along with what was still queued.
	shutdownDrops atomic.Int64
}

// shard is one lane: a ring and the goroutine that batches and sends it.
type shard struct {
	// ring holds the samples waiting to be sent.
	ring *ring
	// flush is closed to make the shard send what it has without waiting
	// for the batch deadline, and exit once empty.
	flush chan struct{}
}

// New builds an endpoint from a validated Config. Nothing runs until Start.
func New(cfg Config, o Options) (*Endpoint, error) {
	hc, err := config.NewClientFromConfig(cfg.HTTPClientConfig, "remote_write_"+cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for endpoint %q: %w", cfg.Name, err)
	}
	hc.Timeout = cfg.RemoteTimeout
	m := o.Metrics.forEndpoint(cfg.Name)
	e := &Endpoint{
		cfg:     cfg,
		log:     o.Logger.With("endpoint", cfg.Name),
		metrics: m,
		sender:  newSender(&cfg, hc, o.UserAgent, m),
	}
	e.drops.every = time.Minute
	n := cfg.QueueConfig.MinShards
	e.shards = make([]*shard, n)
	e.staging = make([][]encode.Sample, n)
	for i := range e.shards {
		e.shards[i] = &shard{ring: newRing(cfg.QueueConfig.Capacity), flush: make(chan struct{})}
	}
	m.shards.Set(float64(n))
	return e, nil
}

// Name is the endpoint's configured name.
func (e *Endpoint) Name() string { return e.cfg.Name }

// Start starts the shards. Requests run until Stop.
func (e *Endpoint) Start() {
	e.sendCtx, e.cancelSend = context.WithCancel(context.Background())
	for _, s := range e.shards {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.runShard(s)
		}()
	}
}

// Append queues items, each on the shard its hash picks, in order. It blocks
// while a shard is full, until ctx ends; it returns the number of items
// queued. Append must be called by one goroutine at a time.
func (e *Endpoint) Append(ctx context.Context, items []Item) int {
	n := uint64(len(e.shards))
	for i := range e.staging {
		e.staging[i] = e.staging[i][:0]
	}
	for i := range items {
		k := items[i].Hash % n
		e.staging[k] = append(e.staging[k], items[i].Sample)
	}
	queued := 0
	for i, s := range e.shards {
		if len(e.staging[i]) == 0 {
			continue
		}
		queued += s.ring.push(ctx, e.staging[i])
		clear(e.staging[i]) // drop label references for the GC
	}
	e.metrics.queueLength.Add(float64(queued))
	return queued
}

// Stop flushes what is queued and waits for it to be sent until ctx ends;
// then it cancels the requests in flight and counts what was left as dropped.
// It returns an error when samples were dropped.
func (e *Endpoint) Stop(ctx context.Context) error {
	for _, s := range e.shards {
		close(s.flush)
	}
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		e.cancelSend()
		return nil
	case <-ctx.Done():
	}
	// Deadline passed: stop taking new samples, end requests in flight.
	left := 0
	for _, s := range e.shards {
		left += s.ring.close()
	}
	e.cancelSend()
	<-done
	if left > 0 {
		e.metrics.dropped[ReasonShutdown].Add(float64(left))
		e.metrics.queueLength.Sub(float64(left))
	}
	if n := left + int(e.shutdownDrops.Load()); n > 0 {
		e.log.Error("dropping samples: stop deadline passed", "samples", n, "queued", left)
		return fmt.Errorf("endpoint %q: %d samples dropped at stop", e.cfg.Name, n)
	}
	return nil
}

// runShard batches and sends one shard's samples until flushed and empty, or
// until the send context is cancelled.
func (e *Endpoint) runShard(s *shard) {
	q := e.cfg.QueueConfig
	batch := make([]encode.Sample, 0, q.MaxSamplesPerSend)
	var raw, compressed []byte
	timer := time.NewTimer(q.BatchSendDeadline)
	timer.Stop()
	timerOn, deadline, flushing := false, false, false
	flush := s.flush
	for {
		batch = s.ring.take(batch, q.MaxSamplesPerSend-len(batch))
		if len(batch) >= q.MaxSamplesPerSend || len(batch) > 0 && (deadline || flushing) {
			raw = encode.AppendWriteRequest(raw[:0], batch)
			compressed = encode.Compress(compressed, raw)
			e.sendBatch(batch, compressed)
			e.metrics.queueLength.Sub(float64(len(batch)))
			clear(batch) // drop label references for the GC
			batch = batch[:0]
			if timerOn {
				timer.Stop()
				timerOn = false
			}
			deadline = false
			if e.sendCtx.Err() != nil {
				return // cancelled after the stop deadline: Stop counts the rest
			}
			continue
		}
		if flushing && len(batch) == 0 {
			return // the producer has stopped and the ring is empty
		}
		if len(batch) > 0 && !timerOn {
			timer.Reset(q.BatchSendDeadline)
			timerOn = true
		}
		select {
		case <-s.ring.notEmpty:
		case <-timer.C:
			timerOn, deadline = false, true
		case <-flush:
			flushing = true
			flush = nil // closed: stop selecting on it
		case <-e.sendCtx.Done():
			// Taken from the ring, so Stop did not count them.
			e.dropAtShutdown(len(batch))
			e.metrics.queueLength.Sub(float64(len(batch)))
			return
		}
	}
}

// sendBatch sends one batch, whose encoded request is body, and accounts for
// every sample of it once, as sent or dropped.
func (e *Endpoint) sendBatch(batch []encode.Sample, body []byte) {
	start := time.Now()
	e.deliver(batch, body)
	e.metrics.sendDuration.Observe(time.Since(start).Seconds())
}

// deliver sends batch, encoded as body. A batch of more than one sample
// answered 413 is split in half and each half delivered in turn, first half
// first, so that every series keeps its order; no other pusher splits
// (../shared/REFERENCE.md, "How the peers send"). A single sample still
// answered 413 is dropped as too_large.
func (e *Endpoint) deliver(batch []encode.Sample, body []byte) {
	n := len(batch)
	err := e.sender.send(e.sendCtx, body, n)
	var herr *HTTPError
	if n > 1 && errors.As(err, &herr) && herr.Status == http.StatusRequestEntityTooLarge {
		e.log.Debug("splitting batch answered 413", "samples", n)
		mid := n / 2
		for _, half := range [][]encode.Sample{batch[:mid], batch[mid:]} {
			// Fresh buffers: the transport may still be reading body.
			e.deliver(half, encode.Compress(nil, encode.AppendWriteRequest(nil, half)))
		}
		return
	}
	if err == nil {
		e.metrics.sent.Add(float64(n))
		e.metrics.bytes.Add(float64(len(body)))
		return
	}
	reason := ReasonClientError
	var rerr *retriesEndedError
	switch {
	case errors.As(err, &rerr):
		reason = ReasonRetriesDone
	case errors.As(err, &herr):
		reason = herr.Reason()
	case e.sendCtx.Err() != nil:
		reason = ReasonShutdown
	}
	if reason == ReasonShutdown {
		e.dropAtShutdown(n)
		return
	}
	e.metrics.dropped[reason].Add(float64(n))
	e.drops.log(e.log, reason, n, err)
}

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
	l.Error("dropping batch", "reason", reason, "samples", n, "batches_dropped_since_last_log", silent, "err", err)
}
