package agent

import (
	"context"

	"github.com/kube-state-push/kube-state-push/queue"
)

// appender is what the tests' endpoints take: a frame's samples in chunks,
// then a flush after its last one, as a queue.Endpoint's shards do.
type appender interface {
	Append(ctx context.Context, items []queue.Item) int
	Flush()
}

// syncSink expands each frame into items at once, on the caller's
// goroutine, as an endpoint would: for tests and benchmarks that look at
// what a tick produced as soon as it returns.
type syncSink struct {
	app appender
	x   queue.Expander
}

// syncSinks returns a syncSink for each appender.
func syncSinks(apps ...appender) []frameSink {
	out := make([]frameSink, len(apps))
	for i, a := range apps {
		out[i] = &syncSink{app: a}
	}
	return out
}

func (s *syncSink) Offer(fr *queue.Frame) {
	s.x.Expand(context.Background(), fr, s.app.Append, s.app.Flush)
}
