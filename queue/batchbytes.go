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
// decodes to more than 32 MiB), senders by its samples. A shard also
// closes a batch before it passes max_bytes_per_send, so that a batch of
// large series does not cost a 413 and a split. It measures each sample
// once as it takes it from the ring (encode.SeriesSize reads the labels
// and allocates nothing): the size of the series in a Remote-Write 1.0
// request, which a 2.0 request's symbol table only makes smaller, but
// for the HELP text of the families it carries.

// batchBytes is the encoded size of a shard's batch as it fills.
type batchBytes struct {
	// limit is max_bytes_per_send.
	limit int
	// size is the bytes of the batch's first measured samples.
	size, measured int
}

// fit measures the samples of batch not yet measured and returns how many
// of its first samples fit within the limit: len(batch), or the index of
// the first that would pass it (0 if that one alone does).
func (b *batchBytes) fit(batch []encode.Sample) int {
	for b.measured < len(batch) {
		n := encode.SeriesSize(&batch[b.measured])
		if b.size+n > b.limit {
			return b.measured
		}
		b.size += n
		b.measured++
	}
	return len(batch)
}

// reset starts a new batch.
func (b *batchBytes) reset() { b.size, b.measured = 0, 0 }

// dropTooLarge drops s, a series larger than max_bytes_per_send alone, and
// counts it as settled, as settle would have once sent.
func (e *Endpoint) dropTooLarge(l *shard, s *encode.Sample) {
	e.metrics.dropped[ReasonSeriesTooLarge].Inc()
	e.load.dropped.Add(1)
	storeMax(&e.load.highestSent, s.Timestamp)
	e.drops.log(e.log, ReasonSeriesTooLarge, 1, fmt.Errorf("a series of %s encodes to %d bytes, more than queue_config.max_bytes_per_send %d",
		encode.MetricNameOf(s.Labels), encode.SeriesSize(s), e.cfg.QueueConfig.MaxBytesPerSend))
	l.settled.Add(1)
	if e.disk == nil {
		e.metrics.queueLength.Sub(1)
	} else {
		e.ackSettled()
	}
}
