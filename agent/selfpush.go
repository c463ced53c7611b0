package agent

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kube-state-push/kube-state-push/encode"
)

// selfJob is the job label of the pushed self-metrics: what a Prometheus
// scraping /metrics would usually call the target, so that dashboards and
// alerts can select the agent's series the same way either way. No instance
// label is added; external_labels (cluster, replica, ...) tell agents apart,
// and shard_ordinal the replicas of an agent whose objects are sharded.
const selfJob = "kube-state-push"

// selfWarnEvery rate-limits the log line about a failed gather: a broken
// collector fails every tick.
const selfWarnEvery = 10 * time.Minute

// selfPush renders the agent's own metrics (the registry behind /metrics)
// into series for each snapshot (push_self_metrics), because edge clusters
// often have nothing that would scrape them. It runs on the snapshot
// goroutine only.
type selfPush struct {
	gatherer prometheus.Gatherer
	// log receives gather errors, rate-limited.
	log *slog.Logger
	// lastWarn is when a gather error was last logged.
	lastWarn time.Time

	// b builds the labels, with the external labels set.
	b encode.LabelsBuilder
	// set holds the series of the current tick. Its Refs are reused between
	// ticks, but its Buf is allocated afresh every tick: the queued samples
	// alias it, and an endpoint that is down may hold them for many ticks,
	// so overwriting it would corrupt samples still queued. The registry
	// holds a few hundred series, so this is one allocation of some tens of
	// kilobytes per tick, sized from the previous tick and thus bounded by
	// what the registry holds.
	set encode.SeriesSet
	// seen holds the label hashes sent this tick, so that no series is sent
	// twice in one snapshot (two label sets can become one once external
	// labels are added). Reused between ticks.
	seen map[uint64]struct{}
	// shard is this replica's object shard while there are several, put
	// on every series as shard_ordinal: the replicas of a sharded agent
	// share their external labels, and their series would collide.
	shard string
}

func newSelfPush(g prometheus.Gatherer, external []encode.Label, log *slog.Logger) *selfPush {
	p := &selfPush{gatherer: g, log: log, seen: make(map[uint64]struct{})}
	p.b.SetExternal(external)
	return p
}

// render gathers the registry into p.set: counters, gauges and untyped
// metrics as one series each; histograms as cumulative _bucket{le} series
// (+Inf included), _sum and _count; summaries as {quantile} series, _sum
// and _count. Native histogram buckets are left out. A gather error is
// logged and whatever was gathered is still rendered.
func (p *selfPush) render() {
	p.set = encode.SeriesSet{Buf: make([]byte, 0, cap(p.set.Buf)), Refs: p.set.Refs[:0]}
	mfs, err := p.gatherer.Gather()
	if err != nil && time.Since(p.lastWarn) >= selfWarnEvery {
		p.lastWarn = time.Now()
		p.log.Warn("gathering self-metrics to push; pushing what was gathered", "err", err)
	}
	p.shard = shardOrdinal(mfs)
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				p.add(name, m, "", "", m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				p.add(name, m, "", "", m.GetGauge().GetValue())
			case m.GetUntyped() != nil:
				p.add(name, m, "", "", m.GetUntyped().GetValue())
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				inf := false
				for _, bk := range h.GetBucket() {
					// Cumulative counts, as in the exposition format.
					p.add(name+"_bucket", m, "le", formatFloat(bk.GetUpperBound()), float64(bk.GetCumulativeCount()))
					inf = inf || math.IsInf(bk.GetUpperBound(), 1)
				}
				if !inf {
					// client_golang leaves the +Inf bucket implicit.
					p.add(name+"_bucket", m, "le", "+Inf", float64(h.GetSampleCount()))
				}
				p.add(name+"_sum", m, "", "", h.GetSampleSum())
				p.add(name+"_count", m, "", "", float64(h.GetSampleCount()))
			case m.GetSummary() != nil:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					p.add(name, m, "quantile", formatFloat(q.GetQuantile()), q.GetValue())
				}
				p.add(name+"_sum", m, "", "", s.GetSampleSum())
				p.add(name+"_count", m, "", "", float64(s.GetSampleCount()))
			}
		}
	}
}

// add renders one series of m named name, with an extra label (le or
// quantile) when extra is not empty.
func (p *selfPush) add(name string, m *dto.Metric, extra, extraValue string, v float64) {
	p.b.Reset()
	p.b.Add(encode.MetricName, name)
	// As a scrape would (honor_labels: false): the target's job wins, the
	// metric's own job label is kept as exported_job.
	p.b.Add("job", selfJob)
	for _, lp := range m.GetLabel() {
		ln := lp.GetName()
		if ln == "job" {
			ln = "exported_job"
		}
		p.b.Add(ln, lp.GetValue())
	}
	if extra != "" {
		p.b.Add(extra, extraValue)
	}
	if p.shard != "" && !hasLabel(m, shardOrdinalLabel) {
		p.b.Add(shardOrdinalLabel, p.shard)
	}
	p.b.AppendTo(&p.set, v)
}

const shardOrdinalLabel = "shard_ordinal"

// shardOrdinal is the object shard the gathered self-metrics show, or ""
// while there is only one (kube_state_push_total_shards).
func shardOrdinal(mfs []*dto.MetricFamily) string {
	var total float64
	var ordinal string
	for _, mf := range mfs {
		switch mf.GetName() {
		case namespace + "_total_shards":
			for _, m := range mf.GetMetric() {
				total = m.GetGauge().GetValue()
			}
		case namespace + "_shard_ordinal":
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == shardOrdinalLabel {
						ordinal = lp.GetValue()
					}
				}
			}
		}
	}
	if total <= 1 {
		return ""
	}
	return ordinal
}

func hasLabel(m *dto.Metric, name string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return true
		}
	}
	return false
}

// formatFloat formats an le or quantile label value as Prometheus 3 stores
// it when it scrapes (formatOpenMetricsFloat in its scrape package): whole
// numbers end in ".0", so the pushed series equal the scraped ones.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	s := fmt.Sprint(f)
	if strings.ContainsAny(s, "e.") {
		return s
	}
	return s + ".0"
}

// addSelf adds the self-metrics to the frame as one more object (selfKey),
// when push_self_metrics is on. The set is made anew every tick (frames
// refer to it, and an endpoint that is down may hold them for long); a
// series whose labels repeat one already added is left out. Self-metric
// series that disappear get no staleness marker.
func (s *snapshotter) addSelf(f *encode.Frame) {
	p := s.self
	p.render()
	clear(p.seen)
	set := &encode.SeriesSet{Buf: p.set.Buf, Refs: make([]encode.Ref, 0, len(p.set.Refs))}
	for _, r := range p.set.Refs {
		if _, dup := p.seen[r.Hash]; dup {
			continue
		}
		p.seen[r.Hash] = struct{}{}
		set.Refs = append(set.Refs, r)
	}
	f.Objects = append(f.Objects, encode.Object{Key: selfKey, Set: set})
}
