package agent

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// aliasing is an appender that keeps the items as given, labels aliased,
// as a queue's ring does.
type aliasing struct {
	items []queue.Item
}

// Flush implements appender: nothing to send.
func (*aliasing) Flush() {}

func (a *aliasing) Append(_ context.Context, items []queue.Item) int {
	a.items = append(a.items, items...)
	return len(items)
}

// selfSnapshotter is a snapshotter without series maps that pushes the
// metrics of reg, with the given external labels, to the appenders.
func selfSnapshotter(reg prometheus.Gatherer, ext map[string]string, to ...appender) *snapshotter {
	return &snapshotter{
		sinks:   syncSinks(to...),
		metrics: newMetrics(prometheus.NewRegistry()),
		self:    newSelfPush(reg, externalLabels(ext), slog.New(slog.DiscardHandler)),
	}
}

// decodeItems checks that the items share the timestamp ts and that no
// series comes twice, and returns them as `name{labels}` to value.
func decodeItems(t *testing.T, items []queue.Item, ts time.Time) map[string]float64 {
	t.Helper()
	out := make(map[string]float64, len(items))
	for _, it := range items {
		require.Equal(t, ts.UnixMilli(), it.Timestamp, "one timestamp per snapshot")
		s := seriesString(t, it.Labels)
		require.NotContains(t, out, s, "series sent twice in one snapshot")
		out[s] = it.Value
	}
	return out
}

func TestSelfPush(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_requests_total", Help: "h"})
	temp := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_temperature_celsius", Help: "h"}, []string{"room"})
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "test_latency_seconds", Help: "h", Buckets: []float64{0.1, 1, 2.5},
	})
	reg.MustRegister(requests, temp, latency)
	requests.Add(3)
	temp.WithLabelValues("a").Set(21.5)
	temp.WithLabelValues("b").Set(-1)
	for _, v := range []float64{0.05, 0.5, 3} {
		latency.Observe(v)
	}

	rec := &recorder{}
	snap := selfSnapshotter(reg, map[string]string{"cluster": "edge-1", "region": "eu"}, rec)
	ts := time.Unix(1_700_000_000, 0)
	n := snap.tick(ts)
	require.Len(t, rec.items, n, "tick counts the self-metric samples")

	const l = `cluster="edge-1",job="kube-state-push",region="eu"`
	want := map[string]float64{
		`test_requests_total{` + l + `}`:                                                            3,
		`test_temperature_celsius{` + l + `,room="a"}`:                                              21.5,
		`test_temperature_celsius{` + l + `,room="b"}`:                                              -1,
		`test_latency_seconds_bucket{cluster="edge-1",job="kube-state-push",le="0.1",region="eu"}`:  1,
		`test_latency_seconds_bucket{cluster="edge-1",job="kube-state-push",le="1.0",region="eu"}`:  2,
		`test_latency_seconds_bucket{cluster="edge-1",job="kube-state-push",le="2.5",region="eu"}`:  2,
		`test_latency_seconds_bucket{cluster="edge-1",job="kube-state-push",le="+Inf",region="eu"}`: 3,
		`test_latency_seconds_sum{` + l + `}`:                                                       3.55,
		`test_latency_seconds_count{` + l + `}`:                                                     3,
	}
	got := decodeItems(t, rec.items, ts)
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
	for k, v := range want {
		require.InDelta(t, v, got[k], 1e-9, k)
	}

	// Hashes are the builder's: the same series keeps its hash (and shard).
	hashes := map[string]uint64{}
	for _, it := range rec.items {
		hashes[seriesString(t, it.Labels)] = it.Hash
	}
	rec.items = nil
	requests.Inc()
	ts2 := ts.Add(30 * time.Second)
	snap.tick(ts2)
	got = decodeItems(t, rec.items, ts2)
	require.Equal(t, float64(4), got[`test_requests_total{`+l+`}`])
	for _, it := range rec.items {
		require.Equal(t, hashes[seriesString(t, it.Labels)], it.Hash)
	}
}

// Queued samples alias the labels; a later tick must not overwrite them
// (an endpoint that is down holds them for many ticks).
func TestSelfPushKeepsQueuedLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_gauge", Help: "h"}, []string{"k"})
	reg.MustRegister(g)
	g.WithLabelValues("first").Set(1)

	q := &aliasing{}
	snap := selfSnapshotter(reg, nil, q)
	ts := time.Unix(1_700_000_000, 0)
	snap.tick(ts)
	first := decodeItems(t, q.items, ts)
	queued := slices.Clone(q.items)

	g.Reset()
	g.WithLabelValues("other").Set(2)
	snap.tick(ts.Add(time.Minute))
	require.Equal(t, first, decodeItems(t, queued, ts))
	require.Equal(t, map[string]float64{`test_gauge{job="kube-state-push",k="first"}`: 1}, first)
}

// A metric's own job label is kept as exported_job, and two series that
// become one once the external labels are added are sent once.
func TestSelfPushLabelClashes(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_gauge", Help: "h"}, []string{"cluster", "job"})
	reg.MustRegister(g)
	g.WithLabelValues("edge-1", "x").Set(1)
	g.WithLabelValues("", "x").Set(1)

	rec := &recorder{}
	snap := selfSnapshotter(reg, map[string]string{"cluster": "edge-1", "job": "ext"}, rec)
	ts := time.Unix(1_700_000_000, 0)
	snap.tick(ts)
	require.Equal(t, map[string]float64{
		`test_gauge{cluster="edge-1",exported_job="x",job="kube-state-push"}`: 1,
	}, decodeItems(t, rec.items, ts))
}

func TestSelfPushSummaryAndUntyped(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "test_summary", Help: "h", Objectives: map[float64]float64{0.5: 0.05}})
	u := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "test_untyped", Help: "h"}, func() float64 { return 7 })
	reg.MustRegister(s, u)
	s.Observe(2)

	rec := &recorder{}
	snap := selfSnapshotter(reg, nil, rec)
	ts := time.Unix(1_700_000_000, 0)
	snap.tick(ts)
	require.Equal(t, map[string]float64{
		`test_summary{job="kube-state-push",quantile="0.5"}`: 2,
		`test_summary_sum{job="kube-state-push"}`:            2,
		`test_summary_count{job="kube-state-push"}`:          1,
		`test_untyped{job="kube-state-push"}`:                7,
	}, decodeItems(t, rec.items, ts))
}

func TestFormatFloat(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", 0.25: "0.25", 1e6: "1e+06", 2.5e-5: "2.5e-05", 0: "0.0"} {
		require.Equal(t, want, formatFloat(f), "%g", f)
	}
}

// push_self_metrics: false adds nothing to the snapshot; the default adds
// the agent's registry.
func TestPushSelfMetricsOption(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			text := "listen_address: \"\"\nremote_write: [{url: http://127.0.0.1:1/api/v1/write}]\n"
			if !on {
				text += "push_self_metrics: false\n"
			}
			cfg, err := config.Load([]byte(text), "test.yaml")
			require.NoError(t, err)
			require.Equal(t, on, cfg.PushSelfMetrics)
			// No resources to watch: the maps stay empty.
			cfg.Watch.Resources = nil
			reg := prometheus.NewRegistry()
			a, err := New(cfg, Options{Clients: &watch.Clients{}, Registry: reg})
			require.NoError(t, err)
			rec := &recorder{}
			a.snap.sinks = syncSinks(rec)
			ts := time.Unix(1_700_000_000, 0)
			n := a.snap.tick(ts)
			require.Len(t, rec.items, n)
			got := decodeItems(t, rec.items, ts)
			if !on {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, `kube_state_push_snapshot_total{job="kube-state-push"}`)
			require.Contains(t, got, `kube_state_push_snapshot_duration_seconds_bucket{job="kube-state-push",le="+Inf"}`)
		})
	}
}

// The replicas of a sharded agent share their external labels: their
// pushed self-metrics carry shard_ordinal while there are several shards,
// and not while there is one.
func TestSelfPushShardOrdinal(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	ts := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		shard, total int
		want         string
	}{{0, 1, ""}, {2, 3, "2"}, {0, 2, "0"}, {0, 1, ""}} {
		m.setSharding(c.shard, c.total)
		rec := &recorder{}
		selfSnapshotter(reg, map[string]string{"cluster": "edge-1"}, rec).tick(ts)
		got := decodeItems(t, rec.items, ts)
		require.NotEmpty(t, got)
		for s := range got {
			if c.want == "" {
				if !strings.HasPrefix(s, "kube_state_push_shard_ordinal{") {
					require.NotContains(t, s, "shard_ordinal", "%d shard: %s", c.total, s)
				}
				continue
			}
			require.Contains(t, s, `shard_ordinal="`+c.want+`"`, "shard %d of %d: %s", c.shard, c.total, s)
			require.Equal(t, 1, strings.Count(s, "shard_ordinal="), "once: %s", s)
		}
	}
}
