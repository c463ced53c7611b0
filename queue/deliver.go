package queue

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang/snappy"

	"github.com/kube-state-push/kube-state-push/encode"
)

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
	// split is the bisection of a refused batch this one is part of; nil
	// outside one.
	split *bisection
}

// sendBatch drops the samples of batch past sample_age_limit (too_old),
// encodes the rest with the shard's encoder into a body of the shard's free
// list (body.go), sends it, and accounts for every sample of it once. It
// returns what is left of batch once the old samples are dropped: what a
// disk-buffered shard tries again after an outcome other than delivered, so that no
// sample is counted as too_old twice. batch itself is never written to.
//
// stored, when not nil, is batch already encoded as a compressed 1.0
// request (a disk buffer record holds one, never written again): it is sent
// as it is while the endpoint speaks 1.0 and no sample was dropped, instead
// of being encoded again.
func (e *Endpoint) sendBatch(l *shard, batch []encode.Sample, d delivery, stored []byte) (outcome, []encode.Sample) {
	start := time.Now()
	if fresh := e.dropTooOld(batch, start); len(fresh) < len(batch) {
		batch, stored = fresh, nil
		if len(batch) == 0 {
			return delivered, batch
		}
	}
	e.negotiate()
	enc := e.encoder(l)
	var o outcome
	if stored != nil && !e.fits(stored) {
		stored = nil // recorded under a larger max_bytes_per_send
	}
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

// fits reports whether a compressed 1.0 request decodes within
// max_bytes_per_send.
func (e *Endpoint) fits(body []byte) bool {
	limit := e.cfg.QueueConfig.MaxBytesPerSend
	if limit <= 0 {
		return true
	}
	n, err := snappy.DecodedLen(body)
	return err == nil && n <= limit
}

// encoder returns the shard's encoder for the endpoint's protocol now.
func (e *Endpoint) encoder(s *shard) encode.RequestEncoder {
	if e.vm.Load() {
		if s.vm == nil {
			s.vm = &encode.VMEncoder{}
		}
		return s.vm
	}
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
func (e *Endpoint) encodeAndDeliver(l *shard, batch []encode.Sample, enc encode.RequestEncoder, d delivery) outcome {
	body := l.bodies.get()
	body.buf = enc.Encode(body.buf, batch)
	if limit := e.cfg.QueueConfig.MaxBytesPerSend; limit > 0 && enc.RawLen() > limit {
		body.release()
		return e.deliverWithin(l, batch, enc, d)
	}
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
		"reason", reason, "protocol", e.cfg.Protocol, "protobuf_message", e.cfg.ProtobufMessage)
}

// protocolVersion is the value of the protocol_version gauge.
func protocolVersion(v2 bool) float64 {
	if v2 {
		return 2
	}
	return 1
}

// deliver sends batch, encoded as body, and releases body once the answer
// is in. A batch of more than one sample answered 413 is split in half and
// each half delivered in turn, first half first, so that every series keeps
// its order; Prometheus' queue manager and vmagent do not split. A single
// sample still answered 413 is dropped as too_large.
//
// A batch refused as bad data (400 or 409) is split the same way until the
// samples the receiver refuses are alone, within a budget of requests
// (refused.go): each refused sample is dropped and counted by the reason
// its answer gives, the rest delivered. A 2.0 receiver that says how many
// samples of the refused request it stored (a partial write) is taken at
// its word instead: those are sent, the rest dropped.
//
// A 2.0 request answered 415, or 2xx without the Samples-Written header, is
// sent again as 1.0 after the endpoint falls back; a 2.0 receiver that wrote
// fewer samples than it was sent is counted (samples_not_written_total).
// With protocol: auto, a VictoriaMetrics protocol request answered 400 or
// 415 is sent again as 1.0 the same way (protocol.go).
//
// With d.keep, a batch whose retries ended is not dropped but kept, and
// one cut off at the stop deadline is not counted: both stay in the disk
// buffer. A split stops at the first half that is not delivered, so
// that the second half is never sent before it.
func (e *Endpoint) deliver(l *shard, batch []encode.Sample, body *reqBody, enc encode.RequestEncoder, d delivery) outcome {
	n := len(batch)
	notAfter := e.ageDeadline(batch)
	w, err := e.sender.sendBody(e.sendCtx, body, n, enc.ContentType(), enc.Version(), notAfter)
	size := len(body.buf)
	// Released before any split, so that the halves take their bodies
	// from the free list rather than one more each level down.
	body.release()
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
	if enc.Version() == encode.VersionVM && isHTTP && e.vmFallback(herr) {
		// vmagent sends the refused request again at once as snappy.
		e.vmRefused(herr.Status)
		return e.encodeAndDeliver(l, batch, &l.v1, d)
	}
	refused := isHTTP && refusedAsBadData(herr)
	switch {
	case refused && w.reported:
		e.partialWrite(batch, w.samples, herr, d)
		return delivered
	case n > 1 && isHTTP && herr.Status == http.StatusRequestEntityTooLarge:
		e.log.Debug("splitting a batch", "samples", n, "status", herr.Status)
		return e.splitInHalves(l, batch, enc, d)
	case n > 1 && refused && !refusedForTheirTime(batch, herr):
		// A resent batch may also mix samples the receiver stored before
		// the restart with some it never got: Prometheus rolls back a
		// whole 1.0 request on the first out-of-order one. Splitting
		// sends every one it lacks.
		if d.split == nil {
			d.split = newBisection(batch)
		}
		if d.split.take() {
			e.log.Debug("splitting a refused batch", "samples", n, "status", herr.Status, "resent", d.resent)
			return e.splitInHalves(l, batch, enc, d)
		}
		// The budget is spent: the batch is dropped whole, counted.
	}
	if err == nil {
		// A 202 is Mimir's HA tracker keeping another replica's samples:
		// these are taken on purpose and never retried, so they count as
		// sent, and as deduplicated so that nobody reads them as stored.
		if w.accepted {
			e.metrics.deduplicated.Add(float64(n))
		}
		e.metrics.sent.Add(float64(n))
		e.metrics.bytes.Add(float64(size))
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
		// sample_age_limit. A disk-buffered shard tries the batch again after a
		// pause, dropping what is too old then; a memory-only shard at once.
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
		reason = e.refusedReason(batch, herr, d)
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
	}
	e.metrics.dropped[reason].Add(float64(n))
	e.load.settled(batch, false)
	e.drops.log(e.log, reason, n, err)
	return delivered
}

// splitInHalves delivers each half of batch in turn, each with a body of
// its own, and stops at the first half that is not delivered.
func (e *Endpoint) splitInHalves(l *shard, batch []encode.Sample, enc encode.RequestEncoder, d delivery) outcome {
	mid := len(batch) / 2
	for _, half := range [][]encode.Sample{batch[:mid], batch[mid:]} {
		if o := e.encodeAndDeliver(l, half, enc, d); o != delivered {
			return o
		}
	}
	return delivered
}
