package kubelet

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the kubelet source's self-metrics, per node and path, as
// node_exporter gives a duration and a success per collector.
type Metrics struct {
	// duration is how long the last read took.
	duration *prometheus.GaugeVec
	// success is 1 if the last read succeeded, else 0 (up).
	success *prometheus.GaugeVec
	// samples is how many samples the last read kept.
	samples *prometheus.GaugeVec
	// filtered counts the samples the path's filters dropped.
	filtered *prometheus.CounterVec
	// dropped counts the samples dropped as not the kubelet's to give, by
	// reason.
	dropped *prometheus.CounterVec
	// errors counts failed reads by reason.
	errors *prometheus.CounterVec
	// skipped counts ticks at which a node was still being read.
	skipped *prometheus.CounterVec
}

// NewMetrics registers the self-metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "kube_state_push", "kubelet"
	m := &Metrics{
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "read_duration_seconds",
			Help: "How long the last read of a kubelet path took."}, []string{"node", "path"}),
		success: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "read_success",
			Help: "Whether the last read of a kubelet path succeeded (1) or not (0)."}, []string{"node", "path"}),
		samples: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "read_samples",
			Help: "Samples the last read of a kubelet path kept."}, []string{"node", "path"}),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "filtered_samples_total",
			Help: "Samples of a kubelet path that its allowlist, denylist or the empty-container drop left out."}, []string{"node", "path"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "dropped_samples_total",
			Help: "Samples of a kubelet path dropped: a family not under family_prefixes, a kube_ series, or a timestamp outside max_sample_age or max_sample_future."}, []string{"node", "path", "reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "read_errors_total",
			Help: "Failed reads of a kubelet path, by reason."}, []string{"node", "path", "reason"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reads_skipped_total",
			Help: "Intervals at which a node was not read because its previous read was still running."}, []string{"node"}),
	}
	reg.MustRegister(m.duration, m.success, m.samples, m.filtered, m.dropped, m.errors, m.skipped)
	return m
}

// addNode initialises a new node's series, every error reason at 0.
func (m *Metrics) addNode(node string, paths []PathConfig) {
	m.skipped.WithLabelValues(node)
	for _, p := range paths {
		m.filtered.WithLabelValues(node, p.Path)
		for _, r := range dropReasons {
			m.dropped.WithLabelValues(node, p.Path, r)
		}
		for _, r := range reasons {
			m.errors.WithLabelValues(node, p.Path, r)
		}
	}
}

// deleteNode removes a node's series.
func (m *Metrics) deleteNode(node string, paths []PathConfig) {
	m.skipped.DeleteLabelValues(node)
	for _, p := range paths {
		m.duration.DeleteLabelValues(node, p.Path)
		m.success.DeleteLabelValues(node, p.Path)
		m.samples.DeleteLabelValues(node, p.Path)
		m.filtered.DeleteLabelValues(node, p.Path)
		for _, r := range dropReasons {
			m.dropped.DeleteLabelValues(node, p.Path, r)
		}
		for _, r := range reasons {
			m.errors.DeleteLabelValues(node, p.Path, r)
		}
	}
}

// observe records one read.
func (m *Metrics) observe(node, path string, res readResult) {
	m.duration.WithLabelValues(node, path).Set(res.took.Seconds())
	m.samples.WithLabelValues(node, path).Set(float64(res.samples))
	m.filtered.WithLabelValues(node, path).Add(float64(res.counts.filtered))
	for i, n := range res.counts.dropped {
		if n > 0 {
			m.dropped.WithLabelValues(node, path, dropReasons[i]).Add(float64(n))
		}
	}
	if res.err != nil {
		m.success.WithLabelValues(node, path).Set(0)
		m.errors.WithLabelValues(node, path, reasonOf(res.err)).Inc()
		return
	}
	m.success.WithLabelValues(node, path).Set(1)
}
