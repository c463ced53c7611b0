package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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

// Endpoint delivers samples to one remote_write URL through shards whose
// number follows the load (lanes.go, reshard.go), each queueing in memory
// or, with disk_buffer, on disk (buffer.go).
type Endpoint struct {
	// cfg is the endpoint's validated configuration.
	cfg Config
	// log has the endpoint's name attached.
	log *slog.Logger
	// metrics are this endpoint's self-metrics.
	metrics *endpointMetrics
	// sender posts batches.
	sender *sender
	// disk is the disk buffer; nil keeps batches in memory.
	disk *diskState

	// cur is the generation Append queues to. Only the producer (Append,
	// and New and Start before it) uses it.
	cur *generation
	// mu guards gens.
	mu sync.Mutex
	// gens are the generations whose lanes may still run, oldest first;
	// the last is cur.
	gens []*generation
	// shardCount is the number of lanes of cur, for the resharding loop.
	shardCount atomic.Int64
	// want is the shard count the resharding loop asks for; 0 for no
	// change.
	want atomic.Int64
	// load is what the resharding loop measures.
	load loadCounters
	// reshardEvery is the resharding interval (reshardInterval; shorter in
	// tests).
	reshardEvery time.Duration
	// reshardStop ends the resharding loop; reshardDone is closed when it
	// ended.
	reshardStop, reshardDone chan struct{}

	// staging holds one scratch list per lane for Append, reused between
	// calls; only the single producer touches it.
	staging [][]encode.Sample
	// rec is Append's scratch space for disk buffer records.
	rec recordScratch
	// drops rate-limits the log lines about dropped batches; keeps those
	// about batches kept in the disk buffer after their retries ended.
	drops, keeps dropLog
	// v2 is true while the endpoint is sent Remote-Write 2.0; it turns
	// false, for the rest of the process' life, when the endpoint shows it
	// speaks only 1.0 (fallBack).
	v2 atomic.Bool
	// metadata is Options.Metadata, or what SetMetadata set since;
	// metadataLookup reads it for 2.0 encoders.
	metadata       atomic.Pointer[map[string]encode.Metadata]
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
	// shutdownDrops counts the samples the shards dropped because the send
	// context was cancelled (in flight or taken at the stop deadline), so
	// that Stop reports them along with what was still queued.
	shutdownDrops atomic.Int64
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
		cfg:          cfg,
		log:          o.Logger.With("endpoint", cfg.Name),
		metrics:      m,
		metaStop:     make(chan struct{}),
		metaDone:     make(chan struct{}),
		reshardEvery: reshardInterval,
		reshardStop:  make(chan struct{}),
		reshardDone:  make(chan struct{}),
	}
	// The sender counts retries in samples_failed_total; the resharder
	// needs to know of them too.
	m.failed = retryCounter{Counter: m.failed, retries: &e.load.retries}
	e.sender = newSender(&cfg, hc, o.UserAgent, m)
	e.SetMetadata(o.Metadata)
	e.metadataLookup = func(name string) (encode.Metadata, bool) {
		md, ok := (*e.metadata.Load())[name]
		return md, ok
	}
	e.v2.Store(cfg.ProtobufMessage == ProtoV2)
	m.protocol.Set(protocolVersion(e.v2.Load()))
	e.drops.every = time.Minute
	e.keeps.every, e.keeps.kept = time.Minute, true
	if cfg.DiskBuffer.Enabled() {
		if e.gens, err = e.openDisk(); err != nil {
			return nil, fmt.Errorf("endpoint %q: disk_buffer %s: %w", cfg.Name, cfg.DiskBuffer.Directory, err)
		}
	} else {
		e.gens = []*generation{e.newMemoryGeneration(cfg.QueueConfig.MinShards, nil)}
	}
	e.cur = e.gens[len(e.gens)-1]
	n := len(e.cur.lanes)
	e.shardCount.Store(int64(n))
	m.shards.Set(float64(n))
	return e, nil
}

// Close releases what New took for an endpoint that is never started: its
// disk buffers (whose data stays for the next endpoint on the directory) and
// the directory's lock. A started endpoint is ended with Stop instead.
func (e *Endpoint) Close() {
	if e.disk == nil {
		return
	}
	for _, g := range e.gens {
		for _, l := range g.lanes {
			if l.buf != nil {
				e.closeLane(l)
			}
		}
	}
	e.unlockDisk()
}

// SetMetadata replaces the families' metadata (Options.Metadata), as a
// reload that changes the families selected does: 2.0 requests carry the new
// metadata from the next batch, 1.0 metadata requests from the next round.
// Safe to call at any time.
func (e *Endpoint) SetMetadata(md map[string]encode.Metadata) {
	e.metadata.Store(&md)
}

// Name is the endpoint's configured name.
func (e *Endpoint) Name() string { return e.cfg.Name }

// Start starts the shards and the resharding loop. Requests run until
// Stop.
func (e *Endpoint) Start() {
	e.sendCtx, e.cancelSend = context.WithCancel(context.Background())
	for _, g := range e.gens {
		e.startGeneration(g)
	}
	go e.runResharding()
	go e.runMetadata()
}

// Append queues items, each on the shard its hash picks, in order. In
// memory it blocks while a shard is full, until ctx ends; with a disk
// buffer it returns once the items are written to disk, whatever the
// receiver does. It returns the number of items queued. Append must be
// called by one goroutine at a time, and not after Stop.
func (e *Endpoint) Append(ctx context.Context, items []Item) int {
	e.maybeReshard()
	g := e.cur
	n := uint64(len(g.lanes))
	for len(e.staging) < len(g.lanes) {
		e.staging = append(e.staging, nil)
	}
	staging := e.staging[:n]
	for i := range staging {
		staging[i] = staging[i][:0]
	}
	newest := int64(math.MinInt64)
	for i := range items {
		k := items[i].Hash % n
		staging[k] = append(staging[k], items[i].Sample)
		newest = max(newest, items[i].Timestamp)
	}
	queued := 0
	for i, l := range g.lanes {
		if len(staging[i]) == 0 {
			continue
		}
		if l.buf != nil {
			queued += e.appendDisk(l, staging[i])
		} else {
			k := l.ring.push(ctx, staging[i])
			e.metrics.queueLength.Add(float64(k))
			queued += k
		}
		clear(staging[i]) // drop label references for the GC
	}
	e.load.in.Add(int64(queued))
	if queued > 0 {
		storeMax(&e.load.highestIn, newest)
	}
	return queued
}

// Flush tells the endpoint that the producer has handed over a whole
// snapshot: memory lanes send their last, partial batch now rather than after
// batch_send_deadline, so a snapshot arrives complete one send after it was
// taken. Disk lanes send as soon as data is on disk anyway. Flush never
// blocks; like Append, it is called by the producer's goroutine.
func (e *Endpoint) Flush() {
	for _, l := range e.cur.lanes {
		if l.kick != nil {
			signal(l.kick)
		}
	}
}

// Stop flushes what is queued and waits for it to be sent until ctx ends;
// then it cancels the requests in flight. In memory, what was left is
// counted as dropped and Stop returns an error; with a disk buffer it stays
// there for the next start.
func (e *Endpoint) Stop(ctx context.Context) error {
	close(e.metaStop)
	defer func() { <-e.metaDone }() // after cancelSend, which ends its request
	close(e.reshardStop)
	<-e.reshardDone
	gens := e.liveGenerations()
	for _, g := range gens {
		for _, l := range g.lanes {
			l.flushNow()
		}
	}
	done := make(chan struct{})
	go func() {
		for _, g := range gens {
			<-g.done
		}
		close(done)
	}()
	select {
	case <-done:
		e.cancelSend()
		e.unlockDisk()
		return nil
	case <-ctx.Done():
	}
	// Deadline passed: stop taking new samples, end requests in flight.
	left := 0
	for _, g := range gens {
		for _, l := range g.lanes {
			if l.ring != nil {
				left += l.ring.close()
			}
		}
	}
	e.cancelSend()
	<-done
	if e.disk != nil {
		e.log.Warn("stop deadline passed: unsent samples stay in the disk buffer for the next start",
			"samples", e.disk.pending.Load(), "dir", e.disk.dir)
		e.unlockDisk()
		return nil
	}
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

// unlockDisk releases the disk buffer directory, once every lane has
// closed its buffer. What stays on disk leaves the queue_length gauge: the
// next endpoint on the directory (a reload's handover, which shares the
// gauge) counts it again when it opens the buffer.
func (e *Endpoint) unlockDisk() {
	if e.disk == nil {
		return
	}
	e.forgetPending()
	if err := e.disk.lock.Close(); err != nil {
		e.log.Error("unlocking the disk buffer directory", "err", err)
	}
}

// outcome is how the delivery of a batch ended.
type outcome int

const (
	// delivered: accepted, or dropped and counted; the batch is done with.
	delivered outcome = iota
	// kept: retries ended with a disk buffer; the batch stays to be sent
	// again.
	kept
	// stopped: the send context was cancelled (Stop's deadline). In memory
	// the batch was counted as dropped; with a disk buffer it stays there.
	stopped
)

// delivery says how deliver treats a batch.
type delivery struct {
	// keep is set with a disk buffer: a batch whose retries ended, or that
	// the stop deadline cut off, is kept rather than dropped.
	keep bool
	// resent marks a batch that may have been delivered before a restart:
	// success counts it in samples_resent_total, and 400 or 409 as
	// dropped with reason resent, apart from bad data.
	resent bool
}

// sendBatch drops the samples of batch past sample_age_limit (too_old),
// encodes the rest with the lane's encoder into a body of the lane's free
// list (body.go), sends it, and accounts for every sample of it once. It
// returns what is left of batch once the old samples are dropped: what a
// disk lane tries again after an outcome other than delivered, so that no
// sample is counted as too_old twice. batch itself is never written to.
//
// stored, when not nil, is batch already encoded as a compressed 1.0
// request (a disk buffer record holds one, never written again): it is sent
// as it is while the endpoint speaks 1.0 and no sample was dropped, instead
// of being encoded again.
func (e *Endpoint) sendBatch(l *lane, batch []encode.Sample, d delivery, stored []byte) (outcome, []encode.Sample) {
	start := time.Now()
	if fresh := e.dropTooOld(batch, start); len(fresh) < len(batch) {
		batch, stored = fresh, nil
		if len(batch) == 0 {
			return delivered, batch
		}
	}
	enc := e.encoder(l)
	var o outcome
	if stored != nil && enc.Version() == encode.VersionV1 {
		o = e.deliver(l, batch, fixedBody(stored), enc, d)
	} else {
		o = e.encodeAndDeliver(l, batch, enc, d)
	}
	took := time.Since(start)
	e.load.sendNanos.Add(int64(took))
	e.metrics.sendDuration.Observe(took.Seconds())
	return o, batch
}

// encoder returns the lane's encoder for the endpoint's protocol now.
func (e *Endpoint) encoder(s *lane) encode.RequestEncoder {
	if !e.v2.Load() {
		return &s.v1
	}
	if s.v2 == nil {
		s.v2 = &encode.V2Encoder{Metadata: e.metadataLookup}
	}
	return s.v2
}

// encodeAndDeliver encodes batch with enc into a body of its own from l's
// free list and delivers it. The body goes back to the list once the
// answer is in and the transport has closed every reader of it, so that
// no request is ever encoded into a body still being sent (body.go).
func (e *Endpoint) encodeAndDeliver(l *lane, batch []encode.Sample, enc encode.RequestEncoder, d delivery) outcome {
	body := l.bodies.get()
	body.buf = enc.Encode(body.buf, batch)
	defer body.release()
	return e.deliver(l, batch, body, enc, d)
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
//
// With d.keep, a batch whose retries ended is not dropped but kept, and
// one cut off at the stop deadline is not counted: both stay in the disk
// buffer. A 413 split stops at the first half that is not delivered, so
// that the second half is never sent before it.
func (e *Endpoint) deliver(l *lane, batch []encode.Sample, body *reqBody, enc encode.RequestEncoder, d delivery) outcome {
	n := len(batch)
	notAfter := e.ageDeadline(batch)
	w, err := e.sender.sendBody(e.sendCtx, body, n, enc.ContentType(), enc.Version(), notAfter)
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
			return e.encodeAndDeliver(l, batch, &l.v1, d)
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
			// Each half has a body of its own: the transport may still be
			// reading this one.
			if o := e.encodeAndDeliver(l, half, enc, d); o != delivered {
				return o
			}
		}
		return delivered
	}
	if err == nil {
		e.metrics.sent.Add(float64(n))
		e.metrics.bytes.Add(float64(len(body.buf)))
		e.sent.Add(int64(n))
		e.load.settled(batch, true)
		if d.resent {
			e.metrics.buf.resent.Add(float64(n))
		}
		return delivered
	}
	reason := ReasonClientError
	var rerr *retriesEndedError
	switch {
	case errors.As(err, &rerr) && !notAfter.IsZero() && !time.Now().Before(notAfter):
		// The retries ended because the oldest sample passed
		// sample_age_limit. A disk lane tries the batch again after a
		// pause, dropping what is too old then; a memory lane at once.
		if d.keep {
			return kept
		}
		rest := e.dropTooOld(batch, time.Now())
		if len(rest) == 0 {
			return delivered
		}
		return e.encodeAndDeliver(l, rest, enc, d)
	case errors.As(err, &rerr):
		reason = ReasonRetriesDone
	case isHTTP:
		reason = herr.Reason()
	case e.sendCtx.Err() != nil:
		reason = ReasonShutdown
	}
	switch {
	case d.keep && reason == ReasonShutdown:
		return stopped
	case d.keep && reason == ReasonRetriesDone:
		e.keeps.log(e.log, reason, n, err)
		return kept
	case reason == ReasonShutdown:
		e.dropAtShutdown(n)
		return stopped
	case d.resent && (reason == ReasonBadRequest || reason == ReasonConflict):
		// Most likely stored before the restart: Prometheus refuses a
		// resent batch once it holds newer samples, Thanos always.
		reason = ReasonResent
	}
	e.metrics.dropped[reason].Add(float64(n))
	e.load.settled(batch, false)
	e.drops.log(e.log, reason, n, err)
	return delivered
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
