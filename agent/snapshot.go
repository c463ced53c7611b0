package agent

import (
	"time"

	"github.com/kube-state-push/kube-state-push/queue"
)

// frameSink takes the snapshots' frames: a queue.Endpoint, or in tests a
// recorder.
type frameSink interface {
	// Offer takes fr, holding it as long as it needs it; it never blocks
	// on an endpoint.
	Offer(fr *queue.Frame)
}

// snapshotter turns the series maps into one frame per tick, with one
// timestamp, and offers it to every endpoint (queue.Endpoint.Offer). It never
// waits for an endpoint, and a frame allocates nothing per series: it
// refers to the series maps' immutable sets, and frames are reused.
type snapshotter struct {
	// maps are the series maps, one per resource.
	maps []*seriesMap
	// sinks take every frame: the endpoints.
	sinks []frameSink
	// hold is set while snapshots are not sent (a follower replica): maps
	// then keep the series that ended for the first snapshot sent.
	hold func() bool
	// metrics count snapshots.
	metrics *metrics
	// self renders the agent's own metrics into each snapshot
	// (selfpush.go); nil when push_self_metrics is off.
	self *selfPush

	// frames are reused between ticks.
	frames queue.FramePool
	// perResource adds up the maps of each resource by its name: one map
	// per scope, and after a reload that rebuilt the resource, the retired
	// maps with the new ones, which have metrics of their own over the same
	// gauges. Reused between ticks; a resource without maps is dropped.
	perResource map[string]*resourceTotals
}

// resourceTotals are a resource's series and sync state over its maps.
type resourceTotals struct {
	// metrics are the resource's: its maps' metrics share their gauges.
	metrics  *resourceMetrics
	series   int
	unsynced bool
	// seen is set when a map of the resource was in this tick.
	seen bool
}

// selfKey is the frame key of the agent's own metrics (push_self_metrics).
// Object keys are hashes of UIDs; this one stands for no object.
const selfKey = 0

// tick takes one snapshot at ts and offers it to every sink. It returns the
// number of samples in it (staleness markers included); 0 while held.
func (s *snapshotter) tick(ts time.Time) int {
	start := time.Now()
	hold := s.held()
	fr := s.frames.Get()
	fr.Timestamp = ts.UnixMilli()
	if s.perResource == nil {
		s.perResource = make(map[string]*resourceTotals)
	}
	for _, t := range s.perResource {
		*t = resourceTotals{}
	}
	for _, m := range s.maps {
		ended := len(fr.Stale)
		count := m.snapshot(&fr.Frame, hold)
		t := s.perResource[m.resource]
		if t == nil {
			t = &resourceTotals{}
			s.perResource[m.resource] = t
		}
		t.metrics, t.seen = m.metrics, true
		t.series += count
		t.unsynced = t.unsynced || !m.synced.Load()
		m.metrics.staleMarkers.Add(float64(len(fr.Stale) - ended))
	}
	if s.self != nil {
		s.addSelf(&fr.Frame)
	}
	total := 0
	if !hold {
		total = fr.Samples()
		for _, k := range s.sinks {
			k.Offer(fr)
		}
		s.metrics.produced.Add(float64(total))
	}
	fr.Release()
	for name, t := range s.perResource {
		if !t.seen {
			// No longer watched: its retired maps are gone.
			delete(s.perResource, name)
			continue
		}
		t.metrics.series.Set(float64(t.series))
		t.metrics.synced.Set(boolGauge(!t.unsynced))
	}
	s.metrics.snapshots.Inc()
	s.metrics.samples.Set(float64(total))
	s.metrics.lastSnapshot.Set(float64(ts.UnixNano()) / 1e9)
	s.metrics.snapshotTime.Observe(time.Since(start).Seconds())
	return total
}

// held reports whether snapshots are held back now.
func (s *snapshotter) held() bool { return s.hold != nil && s.hold() }

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
