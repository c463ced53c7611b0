package agent

import (
	"context"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
)

// appender is what a snapshot is queued to: a queue.Endpoint, or a wrapper
// around one (relabeler, gatedAppender), which passes both calls on.
type appender interface {
	Append(ctx context.Context, items []queue.Item) int
	// Flush says the snapshot's last sample was appended, so that its last,
	// partial batch is sent at once (queue.Endpoint.Flush).
	Flush()
}

// chunkSize is how many samples a snapshot hands to the endpoints at a time.
const chunkSize = 4096

// snapshotter turns the series maps into samples with one timestamp per
// tick and queues them on every endpoint. Its buffers are reused between
// ticks, so a snapshot allocates nothing per series.
type snapshotter struct {
	// maps are the series maps, one per resource.
	maps []*seriesMap
	// endpoints receive every sample.
	endpoints []appender
	// metrics count snapshots.
	metrics *metrics
	// self renders the agent's own metrics into each snapshot
	// (selfpush.go); nil when push_self_metrics is off.
	self *selfPush

	// sets, stale and items are scratch space reused between ticks.
	sets  []*encode.SeriesSet
	stale []staleSeries
	items []queue.Item
	// perResource adds up the maps of a resource (one per scope), reused
	// between ticks.
	perResource map[*resourceMetrics]*resourceTotals
}

// resourceTotals are a resource's series and sync state over its scopes.
type resourceTotals struct {
	series   int
	unsynced bool
}

// staleSeries is a series that ended: its label hash and encoded labels.
type staleSeries struct {
	hash   uint64
	labels []byte
}

// tick takes one snapshot at ts and queues it. It returns the number of
// samples queued to each endpoint (staleness markers included).
func (s *snapshotter) tick(ctx context.Context, ts time.Time) int {
	start := time.Now()
	ms := ts.UnixMilli()
	total := 0
	if s.perResource == nil {
		s.perResource = make(map[*resourceMetrics]*resourceTotals)
	}
	for _, t := range s.perResource {
		*t = resourceTotals{}
	}
	for _, m := range s.maps {
		var count int
		s.sets, s.stale, count = m.snapshot(s.sets[:0], s.stale[:0])
		t := s.perResource[m.metrics]
		if t == nil {
			t = &resourceTotals{}
			s.perResource[m.metrics] = t
		}
		t.series += count
		t.unsynced = t.unsynced || !m.synced.Load()
		for _, set := range s.sets {
			for i := range set.Refs {
				r := &set.Refs[i]
				s.add(ctx, queue.Item{
					Sample: encode.Sample{Labels: set.Buf[r.Off : r.Off+r.Len : r.Off+r.Len], Value: r.Value, Timestamp: ms},
					Hash:   r.Hash,
				})
			}
		}
		for _, st := range s.stale {
			s.add(ctx, queue.Item{
				Sample: encode.Sample{Labels: st.labels, Value: encode.StaleNaN, Timestamp: ms},
				Hash:   st.hash,
			})
		}
		m.metrics.staleMarkers.Add(float64(len(s.stale)))
		total += count + len(s.stale)
		clear(s.sets)
		clear(s.stale)
	}
	total += s.addSelf(ctx, ms)
	s.flush(ctx)
	for _, e := range s.endpoints {
		e.Flush()
	}
	for rm, t := range s.perResource {
		rm.series.Set(float64(t.series))
		rm.synced.Set(boolGauge(!t.unsynced))
	}
	s.metrics.snapshots.Inc()
	s.metrics.samples.Set(float64(total))
	s.metrics.lastSnapshot.Set(float64(ts.UnixNano()) / 1e9)
	s.metrics.snapshotTime.Observe(time.Since(start).Seconds())
	return total
}

func (s *snapshotter) add(ctx context.Context, it queue.Item) {
	s.items = append(s.items, it)
	if len(s.items) >= chunkSize {
		s.flush(ctx)
	}
}

func (s *snapshotter) flush(ctx context.Context) {
	if len(s.items) == 0 {
		return
	}
	for _, e := range s.endpoints {
		e.Append(ctx, s.items)
	}
	clear(s.items)
	s.items = s.items[:0]
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
