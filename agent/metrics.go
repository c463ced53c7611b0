package agent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "kube_state_push"

// metrics are the agent's own self-metrics (the queue has its own).
type metrics struct {
	events        *prometheus.CounterVec
	renderErrors  *prometheus.CounterVec
	invalidSeries *prometheus.CounterVec
	series        *prometheus.GaugeVec
	staleMarkers  *prometheus.CounterVec
	synced        *prometheus.GaugeVec
	snapshots     prometheus.Counter
	snapshotTime  prometheus.Histogram
	samples       prometheus.Gauge
	lastSnapshot  prometheus.Gauge
	snapshotsLate prometheus.Counter
	produced      prometheus.Counter
	shardOrdinal  *prometheus.GaugeVec
	totalShards   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_total",
			Help: "Reflector events handled, by resource and event (add, update, delete, replace).",
		}, []string{"resource", "event"}),
		renderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "render_errors_total",
			Help: "Objects that could not be rendered into series (their previous series are kept).",
		}, []string{"resource"}),
		invalidSeries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "series_invalid_total",
			Help: "Series left out at render for a generated label name invalid in the legacy scheme, or a value not valid UTF-8, by resource; counted at each render of their object.",
		}, []string{"resource"}),
		series: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "series",
			Help: "Series held in the series map at the last snapshot, by resource.",
		}, []string{"resource"}),
		staleMarkers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "stale_markers_total",
			Help: "Staleness markers sent for series that ended, by resource.",
		}, []string{"resource"}),
		synced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "resource_synced",
			Help: "1 once the resource's initial list has been stored.",
		}, []string{"resource"}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "snapshot", Name: "total",
			Help: "Snapshots taken.",
		}),
		snapshotTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "snapshot", Name: "duration_seconds",
			Help:    "Time to take a snapshot and hand it to every endpoint's feed, which never waits for an endpoint.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		samples: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "snapshot", Name: "samples",
			Help: "Samples in the last snapshot, staleness markers included.",
		}),
		lastSnapshot: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "snapshot", Name: "last_timestamp_seconds",
			Help: "Timestamp of the last snapshot.",
		}),
		produced: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "samples_produced_total",
			Help: "Samples in the snapshots handed to the endpoints, staleness markers included: what each endpoint is to send or count as dropped.",
		}),
		snapshotsLate: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "snapshot", Name: "skipped_total",
			Help: "Ticks skipped because the previous snapshot was still being queued.",
		}),
		// Named and shaped as kube-state-metrics' own, so that its
		// shards-missing alert needs only the new names.
		shardOrdinal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "shard_ordinal",
			Help: "The object shard this replica renders (shard, or its StatefulSet ordinal with auto_sharding).",
		}, []string{"shard_ordinal"}),
		totalShards: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "total_shards",
			Help: "The number of object shards this replica knows of (total_shards, or its StatefulSet's replicas with auto_sharding).",
		}),
	}
	reg.MustRegister(m.events, m.renderErrors, m.invalidSeries, m.series, m.staleMarkers, m.synced,
		m.snapshots, m.snapshotTime, m.samples, m.lastSnapshot, m.snapshotsLate, m.produced,
		m.shardOrdinal, m.totalShards)
	return m
}

// resourceMetrics are the metrics of one resource, curried.
type resourceMetrics struct {
	events       *prometheus.CounterVec
	renderErrors prometheus.Counter
	invalid      prometheus.Counter
	series       prometheus.Gauge
	staleMarkers prometheus.Counter
	synced       prometheus.Gauge
}

func (m *metrics) forResource(r string) *resourceMetrics {
	rm := &resourceMetrics{
		events:       m.events.MustCurryWith(prometheus.Labels{"resource": r}),
		renderErrors: m.renderErrors.WithLabelValues(r),
		invalid:      m.invalidSeries.WithLabelValues(r),
		series:       m.series.WithLabelValues(r),
		staleMarkers: m.staleMarkers.WithLabelValues(r),
		synced:       m.synced.WithLabelValues(r),
	}
	for _, e := range []string{"add", "update", "delete", "replace"} {
		rm.events.WithLabelValues(e)
	}
	return rm
}

// setSharding shows the object shard this replica renders and the count.
func (m *metrics) setSharding(shard, total int) {
	m.shardOrdinal.Reset()
	m.shardOrdinal.WithLabelValues(strconv.Itoa(shard)).Set(float64(shard))
	m.totalShards.Set(float64(total))
}
