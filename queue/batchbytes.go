package queue

import (
	"fmt"

	"github.com/kube-state-push/kube-state-push/encode"
)

// ReasonSeriesTooLarge is a series that alone encodes to more than
// queue_config.max_bytes_per_send: no request that holds it fits the
// receiver, so it is dropped before it is sent.
const ReasonSeriesTooLarge = "series_too_large"

// Receivers cap a request by its bytes (Prometheus refuses one that
// decodes to more than 32 MiB), senders by its samples. A batch whose
// encoded request passes max_bytes_per_send is not sent but cut where the
// limit falls, so that a batch of large series does not cost a 413 and a
// split. The encoder reports each request's size as it writes it, so the
// common batch, well under the limit, costs nothing more; only a batch
// past it is measured series by series (encode.SeriesSize: its bytes in a
// 1.0 request, which a 2.0 request's symbol table only makes smaller, but
// for the HELP text of the families it carries) and encoded again.

// fitBytes returns how many of the first samples of batch encode within
// limit bytes (0 if the first alone passes it).
func fitBytes(batch []encode.Sample, limit int) int {
	size := 0
	for i := range batch {
		if size += encode.SeriesSize(&batch[i]); size > limit {
			return i
		}
	}
	return len(batch)
}

// deliverWithin delivers batch, whose encoded request passed
// max_bytes_per_send, as requests that fit it, in order: the samples that
// fit, then the rest. A first sample too large alone is dropped and
// counted. Like a split, it stops at the first part not delivered.
func (e *Endpoint) deliverWithin(l *shard, batch []encode.Sample, enc encode.RequestEncoder, d delivery) outcome {
	limit := e.cfg.QueueConfig.MaxBytesPerSend
	n := fitBytes(batch, limit)
	if n == len(batch) {
		// Within the limit as 1.0, past it as encoded: a 2.0 request
		// whose HELP texts outweigh what its symbols save. Halve it; a
		// single series is too large as it is encoded.
		if n == 1 {
			e.dropTooLarge(batch)
			return delivered
		}
		return e.splitInHalves(l, batch, enc, d)
	}
	for len(batch) > 0 {
		if n == 0 {
			e.dropTooLarge(batch[:1])
			batch = batch[1:]
		} else {
			if o := e.encodeAndDeliver(l, batch[:n], enc, d); o != delivered {
				return o
			}
			batch = batch[n:]
		}
		n = fitBytes(batch, limit)
	}
	return delivered
}

// dropTooLarge drops one, a single series larger than max_bytes_per_send,
// and counts it as deliver counts a dropped sample.
func (e *Endpoint) dropTooLarge(one []encode.Sample) {
	s := &one[0]
	e.metrics.dropped[ReasonSeriesTooLarge].Inc()
	e.load.settled(one, false)
	e.drops.log(e.log, ReasonSeriesTooLarge, 1, fmt.Errorf("a series of %s encodes to %d bytes, more than queue_config.max_bytes_per_send %d",
		encode.MetricNameOf(s.Labels), encode.SeriesSize(s), e.cfg.QueueConfig.MaxBytesPerSend))
}
