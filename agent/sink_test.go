package agent

import (
	"context"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
)

// appender is what the tests' endpoints take: a frame's samples in chunks,
// then a flush after its last one, as a queue.Endpoint's shards do.
type appender interface {
	Append(ctx context.Context, items []queue.Item) int
	Flush()
}

// syncSink expands each frame into items at once, on the caller's
// goroutine: for tests and benchmarks that look at what a tick produced as
// soon as it returns.
type syncSink struct {
	app appender
	// items is the chunk being filled, reused between frames.
	items []queue.Item
}

// syncSinks returns a syncSink for each appender.
func syncSinks(apps ...appender) []frameSink {
	out := make([]frameSink, len(apps))
	for i, a := range apps {
		out[i] = &syncSink{app: a}
	}
	return out
}

// syncChunk is how many samples a syncSink hands over at a time.
const syncChunk = 4096

// Offer hands the app every sample of fr, each live series at its own
// time (a kubelet sample's) or the frame's, then a staleness marker for
// each series that ended in fr, and then a flush.
func (s *syncSink) Offer(fr *queue.Frame) {
	ctx := context.Background()
	add := func(it queue.Item) {
		s.items = append(s.items, it)
		if len(s.items) >= syncChunk {
			s.app.Append(ctx, s.items)
			clear(s.items)
			s.items = s.items[:0]
		}
	}
	for _, o := range fr.Objects {
		set := o.Set
		for i := range set.Refs {
			at := fr.Timestamp
			if set.Timestamps != nil {
				at = set.Timestamps[i]
			}
			add(queue.Item{Sample: encode.Sample{Labels: set.Labels(i), Value: set.Refs[i].Value, Timestamp: at}, Hash: set.Refs[i].Hash})
		}
	}
	for _, st := range fr.Stale {
		add(queue.Item{Sample: encode.Sample{Labels: st.Labels, Value: encode.StaleNaN, Timestamp: fr.Timestamp}, Hash: st.Hash})
	}
	if len(s.items) > 0 {
		s.app.Append(ctx, s.items)
		clear(s.items)
		s.items = s.items[:0]
	}
	s.app.Flush()
}
