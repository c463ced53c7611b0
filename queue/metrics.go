package queue

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a sample is dropped, the values of the `reason` label. Every one is
// initialised to 0 for each endpoint, so that alerts on rate() work from the
// start.
const (
	ReasonBadRequest  = "bad_request"   // 400: the receiver rejected the data
	ReasonConflict    = "conflict"      // 409: out of order, duplicate or too old (Thanos)
	ReasonTooLarge    = "too_large"     // 413: request too big
	ReasonUnsupported = "unsupported"   // 415: content type not accepted
	ReasonRateLimited = "rate_limited"  // 429 while retry_on_http_429 is off
	ReasonClientError = "client_error"  // any other 4xx, or a request that could not be made
	ReasonShutdown    = "shutdown"      // still queued or in flight when the stop deadline passed
	ReasonRetriesDone = "retries_ended" // a recoverable error outlived the retries
	ReasonTooOld      = "too_old"       // older than sample_age_limit, or refused as too old (400, 409)
	// ReasonInvalidLabels is a series with a label name that is not valid
	// in the legacy scheme ([a-zA-Z_][a-zA-Z0-9_]*), dropped before it is
	// sent.
	ReasonInvalidLabels = "invalid_labels"
)

var reasons = []string{
	ReasonBadRequest, ReasonConflict, ReasonTooLarge, ReasonUnsupported,
	ReasonRateLimited, ReasonClientError, ReasonShutdown, ReasonRetriesDone, ReasonTooOld,
	ReasonBufferFull, ReasonBufferError, ReasonResent, // buffermetrics.go
	ReasonQueueFull,                                              // intake.go
	ReasonInvalidLabels, ReasonTooManyLabels, ReasonLabelTooLong, // relabel.go, limits.go
	ReasonSeriesTooLarge, // batchbytes.go
}

// Metrics are the self-metrics of every endpoint, labelled by endpoint name.
// One Metrics serves all endpoints of an agent.
type Metrics struct {
	samplesSent    *prometheus.CounterVec
	samplesFailed  *prometheus.CounterVec
	samplesRetried *prometheus.CounterVec
	samplesDropped *prometheus.CounterVec
	truncated      *prometheus.CounterVec
	bytesSent      *prometheus.CounterVec
	requests       *prometheus.CounterVec
	queueLength    *prometheus.GaugeVec
	shards         *prometheus.GaugeVec
	sendDuration   *prometheus.HistogramVec
	fallbacks      *prometheus.CounterVec
	notWritten     *prometheus.CounterVec
	deduplicated   *prometheus.CounterVec
	metadataSent   *prometheus.CounterVec
	protocol       *prometheus.GaugeVec
	vmProtocol     *prometheus.GaugeVec
	// buffer are the resharding and disk buffer metrics (buffermetrics.go).
	buffer *bufferMetricVecs
	// all are every vector above, each with an endpoint label, for Forget.
	all []partialDeleter
}

// partialDeleter is a metric vector (*prometheus.MetricVec) as Forget
// uses it.
type partialDeleter interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// Reasons a Remote-Write 2.0 endpoint falls back to 1.0, the values of the
// fallback counter's `reason` label.
const (
	FallbackUnsupported     = "unsupported_media_type" // answered 415
	FallbackNoWrittenHeader = "no_written_header"      // a 2xx without X-Prometheus-Remote-Write-Samples-Written
	// FallbackVMRefused is a VictoriaMetrics protocol request answered 400
	// or 415 (protocol: auto), after which the endpoint sends 1.0.
	FallbackVMRefused = "victoriametrics_refused"
)

const (
	namespace = "kube_state_push"
	subsystem = "remote"
)

// NewMetrics creates the queue metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
		}, labels)
	}
	m := &Metrics{
		samplesSent:    counter("samples_sent_total", "Samples accepted by the endpoint (2xx).", "endpoint"),
		samplesFailed:  counter("samples_failed_total", "Samples in send attempts that failed with a recoverable error (network, 5xx, retried 429).", "endpoint"),
		samplesRetried: counter("samples_retried_total", "Samples sent again after a recoverable error.", "endpoint"),
		samplesDropped: counter("samples_dropped_total", "Samples given up on, by reason.", "endpoint", "reason"),
		truncated: counter("samples_truncated_total",
			"Samples sent with a label value cut to the endpoint's series_limits.max_label_value_length.", "endpoint"),
		bytesSent: counter("sent_bytes_total", "Compressed request bytes accepted by the endpoint.", "endpoint"),
		requests:  counter("requests_total", "HTTP requests by status code (\"error\" for no response).", "endpoint", "code"),
		queueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "queue_length",
			Help: "Samples waiting to be sent: in the endpoint's shard rings, or with disk_buffer in its disk buffer.",
		}, []string{"endpoint"}),
		shards: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "shards",
			Help: "Shards the endpoint sends with.",
		}, []string{"endpoint"}),
		sendDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "batch_send_duration_seconds",
			Help:    "Time to send one batch, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"endpoint"}),
		fallbacks: counter("protocol_fallbacks_total",
			"Times an endpoint sent Remote-Write 2.0 or VictoriaMetrics' protocol was found not to speak it and fell back to Remote-Write 1.0, by reason.", "endpoint", "reason"),
		notWritten: counter("samples_not_written_total",
			"Samples a Remote-Write 2.0 endpoint answered with success but did not count in X-Prometheus-Remote-Write-Samples-Written.", "endpoint"),
		deduplicated: counter("samples_deduplicated_total",
			"Samples the endpoint answered 202 Accepted and did not store, because another replica of their HA cluster is elected (Mimir's HA tracker); also counted as sent.", "endpoint"),
		metadataSent: counter("metadata_sent_total",
			"Metadata entries (HELP, TYPE) accepted by a Remote-Write 1.0 endpoint.", "endpoint"),
		protocol: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "protocol_version",
			Help: "Remote-Write major version the endpoint is sent with now: 1 or 2.",
		}, []string{"endpoint"}),
		vmProtocol: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "victoriametrics_protocol",
			Help: "1 while the endpoint is sent VictoriaMetrics' remote write protocol (the 1.0 request, zstd), else 0.",
		}, []string{"endpoint"}),
	}
	reg.MustRegister(m.fallbacks, m.notWritten, m.deduplicated, m.metadataSent, m.protocol, m.vmProtocol, m.truncated)
	reg.MustRegister(m.samplesSent, m.samplesFailed, m.samplesRetried, m.samplesDropped,
		m.bytesSent, m.requests, m.queueLength, m.shards, m.sendDuration)
	m.buffer = newBufferMetrics(reg)
	m.all = []partialDeleter{
		m.samplesSent, m.samplesFailed, m.samplesRetried, m.samplesDropped, m.bytesSent,
		m.requests, m.queueLength, m.shards, m.sendDuration, m.fallbacks, m.notWritten,
		m.deduplicated, m.metadataSent, m.protocol, m.vmProtocol, m.truncated,
		m.buffer.desired, m.buffer.bytes, m.buffer.segments, m.buffer.corrupt, m.buffer.resent,
		m.buffer.thinned,
	}
	return m
}

// Forget deletes every series of the endpoint named endpoint from the
// shared metrics, for an endpoint a reload removed. Call it once that
// endpoint has stopped, and never for a name a running endpoint still has
// (a kept or handed-over endpoint keeps its series): an endpoint's metrics
// are created by New, and one still running would go on counting into
// series nothing exports any more.
func (m *Metrics) Forget(endpoint string) {
	match := prometheus.Labels{"endpoint": endpoint}
	for _, v := range m.all {
		v.DeletePartialMatch(match)
	}
}

// endpointMetrics are the metrics of one endpoint, curried.
type endpointMetrics struct {
	sent, failed, retried, bytes prometheus.Counter
	dropped                      map[string]prometheus.Counter
	requests                     *prometheus.CounterVec
	queueLength, shards          prometheus.Gauge
	sendDuration                 prometheus.Observer
	buf                          *bufferMetrics
	fallbacks                    map[string]prometheus.Counter
	notWritten, metadataSent     prometheus.Counter
	deduplicated                 prometheus.Counter
	truncated                    prometheus.Counter
	protocol, vmProtocol         prometheus.Gauge
}

func (m *Metrics) forEndpoint(name string) *endpointMetrics {
	em := &endpointMetrics{
		sent:         m.samplesSent.WithLabelValues(name),
		failed:       m.samplesFailed.WithLabelValues(name),
		retried:      m.samplesRetried.WithLabelValues(name),
		bytes:        m.bytesSent.WithLabelValues(name),
		dropped:      make(map[string]prometheus.Counter, len(reasons)),
		requests:     m.requests.MustCurryWith(prometheus.Labels{"endpoint": name}),
		queueLength:  m.queueLength.WithLabelValues(name),
		shards:       m.shards.WithLabelValues(name),
		sendDuration: m.sendDuration.WithLabelValues(name),
	}
	for _, r := range reasons {
		em.dropped[r] = m.samplesDropped.WithLabelValues(name, r)
	}
	em.fallbacks = map[string]prometheus.Counter{
		FallbackUnsupported:     m.fallbacks.WithLabelValues(name, FallbackUnsupported),
		FallbackNoWrittenHeader: m.fallbacks.WithLabelValues(name, FallbackNoWrittenHeader),
		FallbackVMRefused:       m.fallbacks.WithLabelValues(name, FallbackVMRefused),
	}
	em.notWritten = m.notWritten.WithLabelValues(name)
	em.deduplicated = m.deduplicated.WithLabelValues(name)
	em.metadataSent = m.metadataSent.WithLabelValues(name)
	em.truncated = m.truncated.WithLabelValues(name)
	em.protocol = m.protocol.WithLabelValues(name)
	em.vmProtocol = m.vmProtocol.WithLabelValues(name)
	em.buf = m.buffer.forEndpoint(name)
	return em
}
