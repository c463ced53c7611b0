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
	// Metadata is the type, help and unit of every family the agent sends,
	// by metric name: inline in every 2.0 series, and in metadata requests
	// of their own to a 1.0 endpoint (metadata_config). Nil sends none.
	Metadata map[string]encode.Metadata
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
	// v2 is true while the endpoint is sent Remote-Write 2.0; it turns
	// false, for the rest of the process' life, when the endpoint shows it
	// speaks only 1.0 (fallBack).
	v2 atomic.Bool
	// metadata is Options.Metadata; metadataLookup reads it for 2.0
	// encoders.
	metadata       map[string]encode.Metadata
	metadataLookup encode.MetadataFunc
	// sent counts samples accepted, so that metadata is sent only by an
	// endpoint that sends samples (a standby replica sends neither).
	sent atomic.Int64
	// metaStop ends the metadata loop; metaDone is closed when it ended.
	metaStop, metaDone chan struct{}

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
	// v1 and v2 encode the shard's batches; they keep scratch space
	// between batches. v2 is nil until the endpoint is sent 2.0.
	v1 encode.V1Encoder
	v2 *encode.V2Encoder
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
		cfg:      cfg,
		log:      o.Logger.With("endpoint", cfg.Name),
		metrics:  m,
		sender:   newSender(&cfg, hc, o.UserAgent, m),
		metadata: o.Metadata,
		metaStop: make(chan struct{}),
		metaDone: make(chan struct{}),
	}
	if o.Metadata != nil {
		e.metadataLookup = func(name string) (encode.Metadata, bool) {
			md, ok := o.Metadata[name]
			return md, ok
		}
	}
	e.v2.Store(cfg.ProtobufMessage == ProtoV2)
	m.protocol.Set(protocolVersion(e.v2.Load()))
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
	go e.runMetadata()
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
	close(e.metaStop)
	defer func() { <-e.metaDone }() // after cancelSend, which ends its request
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
	var compressed []byte
	timer := time.NewTimer(q.BatchSendDeadline)
	timer.Stop()
	timerOn, deadline, flushing := false, false, false
	flush := s.flush
	for {
		batch = s.ring.take(batch, q.MaxSamplesPerSend-len(batch))
		if len(batch) >= q.MaxSamplesPerSend || len(batch) > 0 && (deadline || flushing) {
			enc := e.encoder(s)
			compressed = enc.Encode(compressed, batch)
			e.sendBatch(batch, compressed, enc)
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

// sendBatch sends one batch, whose request enc encoded as body, and
// accounts for every sample of it once, as sent or dropped.
func (e *Endpoint) sendBatch(batch []encode.Sample, body []byte, enc encode.RequestEncoder) {
	start := time.Now()
	e.deliver(batch, body, enc)
	e.metrics.sendDuration.Observe(time.Since(start).Seconds())
}

// encoder returns the shard's encoder for the endpoint's protocol now.
func (e *Endpoint) encoder(s *shard) encode.RequestEncoder {
	if !e.v2.Load() {
		return &s.v1
	}
	if s.v2 == nil {
		s.v2 = &encode.V2Encoder{Metadata: e.metadataLookup}
	}
	return s.v2
}

// newEncoder returns a fresh encoder of the same protocol as enc, for
// requests whose buffers must not be shared with one still being sent.
func (e *Endpoint) newEncoder(enc encode.RequestEncoder) encode.RequestEncoder {
	if enc.Version() == encode.VersionV2 {
		return &encode.V2Encoder{Metadata: e.metadataLookup}
	}
	return &encode.V1Encoder{}
}

// fallBack switches the endpoint to Remote-Write 1.0 for good, once: it was
// sent 2.0 and answered like a receiver that speaks only 1.0
// (remote_write_spec_2_0.md: 415, or a 2xx without the Samples-Written
// header, after which nothing may have been stored).
func (e *Endpoint) fallBack(reason string) {
	if !e.v2.CompareAndSwap(true, false) {
		return // another shard fell back first
	}
	e.metrics.fallbacks[reason].Inc()
	e.metrics.protocol.Set(protocolVersion(false))
	e.log.Warn("endpoint speaks only Remote-Write 1.0: falling back to 1.0 for the rest of this run",
		"reason", reason, "protobuf_message", e.cfg.ProtobufMessage)
}

// protocolVersion is the value of the protocol_version gauge.
func protocolVersion(v2 bool) float64 {
	if v2 {
		return 2
	}
	return 1
}

// deliver sends batch, encoded as body. A batch of more than one sample
// answered 413 is split in half and each half delivered in turn, first half
// first, so that every series keeps its order; no other pusher splits
// (../shared/REFERENCE.md, "How the peers send"). A single sample still
// answered 413 is dropped as too_large.
//
// A 2.0 request answered 415, or 2xx without the Samples-Written header, is
// sent again as 1.0 after the endpoint falls back; a 2.0 receiver that wrote
// fewer samples than it was sent is counted (samples_not_written_total).
func (e *Endpoint) deliver(batch []encode.Sample, body []byte, enc encode.RequestEncoder) {
	n := len(batch)
	w, err := e.sender.send(e.sendCtx, body, n, enc.ContentType(), enc.Version())
	var herr *HTTPError
	isHTTP := errors.As(err, &herr)
	if enc.Version() == encode.VersionV2 {
		fallback := ""
		switch {
		case err == nil && !w.reported:
			fallback = FallbackNoWrittenHeader
		case isHTTP && herr.Status == http.StatusUnsupportedMediaType:
			fallback = FallbackUnsupported
		}
		if fallback != "" {
			e.fallBack(fallback)
			v1 := &encode.V1Encoder{}
			// A fresh buffer: the transport may still be reading body.
			e.deliver(batch, v1.Encode(nil, batch), v1)
			return
		}
		if err == nil && w.samples < n && !w.accepted {
			e.metrics.notWritten.Add(float64(n - w.samples))
			e.drops.log(e.log, "not_written", n-w.samples, fmt.Errorf("endpoint wrote %d of %d samples", w.samples, n))
		}
	}
	if n > 1 && isHTTP && herr.Status == http.StatusRequestEntityTooLarge {
		e.log.Debug("splitting batch answered 413", "samples", n)
		mid := n / 2
		for _, half := range [][]encode.Sample{batch[:mid], batch[mid:]} {
			// Fresh buffers: the transport may still be reading body.
			enc := e.newEncoder(enc)
			e.deliver(half, enc.Encode(nil, half), enc)
		}
		return
	}
	if err == nil {
		e.metrics.sent.Add(float64(n))
		e.metrics.bytes.Add(float64(len(body)))
		e.sent.Add(int64(n))
		return
	}
	reason := ReasonClientError
	var rerr *retriesEndedError
	switch {
	case errors.As(err, &rerr):
		reason = ReasonRetriesDone
	case isHTTP:
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
