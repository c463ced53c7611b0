package agent

import (
	"context"
	"sync/atomic"
)

// gate lets only the leader's snapshots reach the endpoints. The agent opens
// or closes it between ticks (openGate), so a snapshot is sent whole or not
// at all; while it is closed the snapshotter holds its snapshots back
// (snapshotter.hold).
type gate struct {
	// open is set between ticks and read during them.
	open atomic.Bool
}

// elect starts the leader election, if enabled, with a context of its own:
// the Lease is released only once stop is called, after the final snapshot
// is queued, so that the next leader's first snapshot follows it. stop
// waits for the release within ctx.
func (a *Agent) elect(ctx context.Context) (stop func(context.Context)) {
	if a.leader == nil {
		return func(context.Context) {}
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.leader.Run(ectx)
	}()
	return func(ctx context.Context) {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			a.log.Warn("leader election did not stop in time", "err", ctx.Err())
		}
	}
}

// openGate lets the coming snapshot through if this replica leads. Followers
// still take snapshots, unsent: that keeps their series counts current, and
// their series maps keep what ended (for staleness markers once they lead).
func (a *Agent) openGate() {
	if a.gate != nil {
		a.gate.open.Store(a.leader.Leading())
	}
}
