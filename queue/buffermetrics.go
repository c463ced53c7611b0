package queue

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Drop reasons of the disk buffer and of restarts (see metrics.go for the
// others).
const (
	// ReasonBufferFull is a batch the disk buffer's size cap (max_bytes)
	// deleted before it could be sent: the oldest go first.
	ReasonBufferFull = "buffer_full"
	// ReasonBufferError is a batch that could not be written to, or read
	// back from, the disk buffer.
	ReasonBufferError = "buffer_error"
	// ReasonResent is a batch sent again after a restart because it was in
	// flight when the agent stopped, which the receiver refused (400, 409)
	// as already stored: not bad data, and not lost.
	ReasonResent = "resent"
)

// bufferMetricVecs are the resharding, disk buffer and restart metrics,
// labelled by endpoint.
type bufferMetricVecs struct {
	desired         *prometheus.GaugeVec
	bytes, segments *prometheus.GaugeVec
	corrupt, resent *prometheus.CounterVec
	thinned         *prometheus.CounterVec
}

// newBufferMetrics creates the resharding and disk buffer metrics and
// registers them with reg.
func newBufferMetrics(reg prometheus.Registerer) *bufferMetricVecs {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
		}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
		}, labels)
	}
	v := &bufferMetricVecs{
		desired: gauge("shards_desired",
			"Shards the endpoint's send rate and backlog call for, before rounding, the 30 % dead band and the min/max bounds.", "endpoint"),
		bytes: gauge("buffer_bytes",
			"Bytes of the endpoint's disk buffer segment files (0 without disk_buffer).", "endpoint"),
		segments: gauge("buffer_segments",
			"Segment files of the endpoint's disk buffer (0 without disk_buffer).", "endpoint"),
		corrupt: counter("buffer_corrupt_total",
			"Corrupt or truncated disk buffer segments, checkpoints and records met and skipped.", "endpoint"),
		resent: counter("samples_resent_total",
			"Samples sent again after a restart because the snapshots they belong to were in flight (handed to the shards, not all delivered) when the agent stopped.", "endpoint"),
		thinned: counter("samples_thinned_total",
			"Samples of a disk buffer backlog left out by backfill_resolution: their series had the value last sent.", "endpoint"),
	}
	reg.MustRegister(v.desired, v.bytes, v.segments, v.corrupt, v.resent, v.thinned)
	return v
}

// bufferMetrics are one endpoint's resharding and disk buffer metrics.
type bufferMetrics struct {
	desired, bytes, segments prometheus.Gauge
	corrupt, resent, thinned prometheus.Counter
}

func (v *bufferMetricVecs) forEndpoint(name string) *bufferMetrics {
	return &bufferMetrics{
		desired:  v.desired.WithLabelValues(name),
		bytes:    v.bytes.WithLabelValues(name),
		segments: v.segments.WithLabelValues(name),
		corrupt:  v.corrupt.WithLabelValues(name),
		resent:   v.resent.WithLabelValues(name),
		thinned:  v.thinned.WithLabelValues(name),
	}
}

// retryCounter is the samples_failed_total counter, which the sender adds
// to on every retry, also telling the resharder that requests are being
// retried.
type retryCounter struct {
	prometheus.Counter
	retries *atomic.Int64
}

// Add implements prometheus.Counter.
func (c retryCounter) Add(v float64) {
	c.Counter.Add(v)
	c.retries.Add(1)
}

// Inc implements prometheus.Counter.
func (c retryCounter) Inc() { c.Add(1) }
