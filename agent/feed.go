package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/queue/framelog"
)

// A snapshot reaches the endpoints as one frame (encode.Frame): references
// to the series sets of every object, shared by all endpoints. Each
// endpoint has a feed, which takes frames without ever blocking the
// snapshot loop and hands them, sample by sample, to the endpoint on a
// goroutine of its own. So a dead, slow or throttling endpoint holds back
// only its own feed: never a snapshot, another endpoint, a reload, a leader
// takeover, or the stop beyond its deadline.
//
//	snapshot loop ──offer──► feed (frames waiting) ──goroutine──► relabeler ─► queue.Endpoint
//	             └─offer──► feed ...
//
// A feed holds a bounded number of frames waiting. When it is full, the
// oldest waiting frame is dropped whole and counted (reason queue_full),
// never a part of one; its staleness markers are carried to the next frame
// pushed, so that series that ended in it still end.
//
// For an endpoint with a disk buffer (queue.Endpoint.Durable) the feed's
// goroutine writes each frame to the buffer instead, which never waits for
// the receiver, and a second goroutine replays the buffer's frames to the
// endpoint, oldest first, each acknowledged there once delivered:
//
//	feed (frames waiting) ──writer──► disk buffer ──replayer──► relabeler ─► queue.Endpoint

// sharedFrame is a frame handed to several feeds; it goes back to its pool
// once each has released it.
type sharedFrame struct {
	encode.Frame
	// refs counts the holders: the snapshot loop while it builds the frame,
	// and each feed until it has pushed or dropped it.
	refs atomic.Int32
	// pool takes the frame back; nil for a frame that is not pooled.
	pool *framePool
}

// hold adds a holder.
func (f *sharedFrame) hold() { f.refs.Add(1) }

// release drops a holder; the last one returns the frame to its pool.
func (f *sharedFrame) release() {
	if f.refs.Add(-1) == 0 && f.pool != nil {
		f.pool.put(f)
	}
}

// framePool keeps a few released frames for reuse, so that the Objects and
// Stale slices of a snapshot are not allocated again every tick.
type framePool struct {
	// mu guards free.
	mu sync.Mutex
	// free are released frames, emptied.
	free []*sharedFrame
}

// framePoolKeep is how many released frames a pool keeps.
const framePoolKeep = 4

// get returns an empty frame held once (by the caller).
func (p *framePool) get() *sharedFrame {
	p.mu.Lock()
	var f *sharedFrame
	if n := len(p.free); n > 0 {
		f = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if f == nil {
		f = &sharedFrame{pool: p}
	}
	f.refs.Store(1)
	return f
}

func (p *framePool) put(f *sharedFrame) {
	f.Reset()
	p.mu.Lock()
	if len(p.free) < framePoolKeep {
		p.free = append(p.free, f)
	}
	p.mu.Unlock()
}

// frameSink takes the snapshots' frames: a feed, or (in tests and
// benchmarks) a syncSink.
type frameSink interface {
	// offer takes f, which stays valid until released; it never blocks on
	// an endpoint.
	offer(f *sharedFrame)
}

// feedQueue is what a feed needs of its endpoint (queue.Endpoint): drops
// it counts, and the disk buffer when there is one.
type feedQueue interface {
	// CountDropped counts samples dropped before they were appended.
	CountDropped(reason string, samples int)
	// Durable reports whether the endpoint has a disk buffer, which the
	// other methods use.
	Durable() bool
	// WriteFrame stores a frame in the disk buffer (counting a failure).
	WriteFrame(f *encode.Frame) error
	// NextFrame returns the oldest stored frame not yet handed out, or
	// framelog.ErrEmpty.
	NextFrame() (*encode.Frame, framelog.Info, error)
	// FrameReady receives after a frame is written.
	FrameReady() <-chan struct{}
	// FramePushed says the last frame NextFrame returned was appended and
	// flushed, or was sent ahead already (SentLive).
	FramePushed(f *encode.Frame, info framelog.Info)
	// NewestFirst reports backfill: newest_first.
	NewestFirst() bool
	// Behind reports a backlog in the disk buffer.
	Behind() bool
	// PushedLive says a frame just written was appended ahead of the
	// backlog; SentLive tells it apart when it is read back.
	PushedLive(f *encode.Frame)
	SentLive(f *encode.Frame) bool
	// InFlight is the number of frames handed over and not yet
	// delivered; Progress receives when that may have changed.
	InFlight() int
	Progress() <-chan struct{}
}

// replayAhead is how many frames the replayer keeps handed to the endpoint
// and not yet delivered (queue.Endpoint.InFlight).
const replayAhead = 2

// feed hands one endpoint its frames; see the top of this file.
type feed struct {
	// app is the endpoint, behind its relabeler if it has one.
	app appender
	// q is the endpoint itself.
	q feedQueue
	// limit returns how many frames may wait; read at every offer, as
	// snapshot_interval may change on a reload.
	limit func() int

	// mu guards pending, carry and closed.
	mu sync.Mutex
	// pending are the frames waiting, oldest first.
	pending []*sharedFrame
	// carry holds the staleness markers of frames dropped since the last
	// frame pushed.
	carry []encode.Stale
	// closed is set by stop: no more frames are taken.
	closed bool
	// wake gets a token when a frame is offered or the feed is closed.
	wake chan struct{}

	// ctx is the context of Append; cancel ends it at the stop deadline.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when the goroutine has ended.
	done chan struct{}
	// exp expands frames; used by the goroutine only.
	exp expander

	// With a disk buffer: replayed is closed when the replayer has ended;
	// replay expands its frames; written holds the frame being written,
	// with the carried staleness markers (the writer's only).
	replayed chan struct{}
	replay   expander
	written  encode.Frame
	// With backfill: newest_first and a disk buffer, live holds the newest
	// frame written while there was a backlog (guarded by mu), for the
	// replayer to send ahead of it; liveReady gets a token when it is set.
	live      *sharedFrame
	liveReady chan struct{}
	// fresh is set (guarded by mu) when a frame was offered since next
	// last took the newest one: with newest_first and no disk buffer, next
	// takes that one ahead of the older frames waiting.
	fresh bool
}

// newFeed returns a feed to app, in front of q; start runs it.
func newFeed(app appender, q feedQueue, limit func() int) *feed {
	f := &feed{app: app, q: q, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{}),
		replayed: make(chan struct{}), liveReady: make(chan struct{}, 1)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// start runs the feed's goroutines.
func (f *feed) start() {
	if !f.q.Durable() {
		close(f.replayed)
		go f.run()
		return
	}
	go f.write()
	go f.runReplay()
}

// offer queues fr for the endpoint. When limit frames already wait, the
// oldest is dropped whole and counted.
func (f *feed) offer(fr *sharedFrame) {
	fr.hold()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		fr.release()
		return
	}
	var dropped *sharedFrame
	if len(f.pending) >= max(1, f.limit()) {
		dropped = f.pending[0]
		f.pending[0] = nil
		f.pending = f.pending[1:]
		f.carry = append(f.carry, dropped.Stale...)
	}
	f.pending = append(f.pending, fr)
	f.fresh = true
	f.mu.Unlock()
	signal(f.wake)
	if dropped != nil {
		f.q.CountDropped(queue.ReasonQueueFull, dropped.Samples()-len(dropped.Stale))
		dropped.release()
	}
}

// next returns the oldest waiting frame and the carried staleness markers,
// waiting for one; nil once the feed is closed and empty, or cancelled.
func (f *feed) next() (*sharedFrame, []encode.Stale) {
	for {
		f.mu.Lock()
		if f.ctx.Err() == nil && len(f.pending) > 0 {
			var fr *sharedFrame
			if n := len(f.pending); n > 1 && f.fresh && f.q.NewestFirst() && !f.q.Durable() {
				// backfill: newest_first: the current state first, the
				// backlog after it.
				fr = f.pending[n-1]
				f.pending[n-1] = nil
				f.pending = f.pending[:n-1]
			} else {
				fr = f.pending[0]
				f.pending[0] = nil
				f.pending = f.pending[1:]
			}
			f.fresh = false
			if len(f.pending) == 0 {
				f.pending = f.pending[:0:0] // let the backing array go
			}
			carry := f.carry
			f.carry = nil
			f.mu.Unlock()
			return fr, carry
		}
		closed := f.closed
		f.mu.Unlock()
		if closed || f.ctx.Err() != nil {
			return nil, nil
		}
		select {
		case <-f.wake:
		case <-f.ctx.Done():
		}
	}
}

// run pushes frames until the feed is closed and empty, or cancelled.
func (f *feed) run() {
	defer close(f.done)
	for {
		fr, carry := f.next()
		if fr == nil {
			return
		}
		want := fr.Samples() + len(carry)
		got := f.exp.push(f.ctx, f.app, &fr.Frame, carry)
		if got < want && f.ctx.Err() != nil {
			f.q.CountDropped(queue.ReasonShutdown, want-got)
		}
		fr.release()
	}
}

// write stores frames in the disk buffer until the feed is closed and
// empty, or cancelled. The staleness markers carried from dropped frames
// are added to the frame written (a copy: the frame is shared).
func (f *feed) write() {
	defer close(f.done)
	for {
		fr, carry := f.next()
		if fr == nil {
			return
		}
		w := &f.written
		w.Timestamp, w.Objects = fr.Timestamp, fr.Objects
		w.Stale = append(append(w.Stale[:0], fr.Stale...), f.exp.stillEnded(&fr.Frame, carry)...)
		err := f.q.WriteFrame(w) // a failure is counted and logged by the endpoint
		w.Objects = nil
		clear(w.Stale)
		if err == nil && f.q.NewestFirst() && f.q.Behind() {
			f.setLive(fr) // the replayer sends it ahead of the backlog
		}
		fr.release()
	}
}

// setLive makes fr the frame to send ahead of the backlog, in place of an
// older one the replayer has not taken yet (its stored copy follows in
// order with the backlog).
func (f *feed) setLive(fr *sharedFrame) {
	fr.hold()
	f.mu.Lock()
	old := f.live
	f.live = fr
	f.mu.Unlock()
	if old != nil {
		old.release()
	}
	signal(f.liveReady)
}

// takeLive returns the frame to send ahead of the backlog, if any.
func (f *feed) takeLive() *sharedFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.live
	f.live = nil
	return fr
}

// pushLive sends the frame waiting to go ahead of the backlog, if any; it
// reports false if the push was cut off by the stop deadline.
func (f *feed) pushLive() bool {
	fr := f.takeLive()
	if fr == nil {
		return true
	}
	defer fr.release()
	want := fr.Samples()
	if got := f.replay.push(f.ctx, f.app, &fr.Frame, nil); got < want && f.ctx.Err() != nil {
		return false
	}
	f.q.PushedLive(&fr.Frame)
	return true
}

// runReplay hands the endpoint the disk buffer's frames, oldest first, each
// acknowledged there once delivered, until the writer has ended and every
// frame is handed out, or until cancelled. A frame cut off by the stop
// deadline stays in the buffer for the next start.
func (f *feed) runReplay() {
	defer close(f.replayed)
	defer func() {
		if fr := f.takeLive(); fr != nil {
			fr.release()
		}
	}()
	writerDone := false
	for f.ctx.Err() == nil {
		if f.q.InFlight() >= replayAhead {
			select {
			case <-f.q.Progress():
			case <-f.ctx.Done():
			}
			continue
		}
		if !f.pushLive() {
			return
		}
		fr, info, err := f.q.NextFrame()
		switch {
		case errors.Is(err, framelog.ErrEmpty):
			if writerDone {
				return
			}
			select {
			case <-f.done:
				writerDone = true // all it wrote is in: one more look
			case <-f.q.FrameReady():
			case <-f.liveReady:
			case <-f.ctx.Done():
			}
			continue
		case err != nil:
			// Counted and logged by the endpoint; try again shortly.
			select {
			case <-time.After(time.Second):
			case <-f.ctx.Done():
			}
			continue
		}
		if !f.q.SentLive(fr) {
			want := fr.Samples()
			if got := f.replay.push(f.ctx, f.app, fr, nil); got < want && f.ctx.Err() != nil {
				return // cut off: the frame stays in the buffer
			}
		}
		f.q.FramePushed(fr, info)
	}
}

// stop takes no more frames and waits until those waiting are handed to the
// endpoint (with a disk buffer: written, and every frame of the buffer
// handed over), or until ctx ends: then the one being handed over is cut
// off and the rest are dropped, counted as shutdown. It returns the number
// of samples dropped.
func (f *feed) stop(ctx context.Context) int {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	signal(f.wake)
	for _, c := range []chan struct{}{f.done, f.replayed} {
		select {
		case <-c:
		case <-ctx.Done():
		}
	}
	f.cancel()
	<-f.done
	<-f.replayed
	f.mu.Lock()
	left := f.pending
	f.pending = nil
	f.mu.Unlock()
	n := 0
	for _, fr := range left {
		n += fr.Samples()
		fr.release()
	}
	if n > 0 {
		f.q.CountDropped(queue.ReasonShutdown, n)
	}
	return n
}

// syncSink pushes each frame at once, on the caller's goroutine: for tests
// and benchmarks that look at what a tick queued as soon as it returns.
type syncSink struct {
	app appender
	exp *expander
}

// syncSinks returns a syncSink for each appender.
func syncSinks(apps ...appender) []frameSink {
	out := make([]frameSink, len(apps))
	for i, a := range apps {
		out[i] = syncSink{app: a, exp: &expander{}}
	}
	return out
}

func (s syncSink) offer(fr *sharedFrame) {
	s.exp.push(context.Background(), s.app, &fr.Frame, nil)
}

// signal puts a token in c if it has room.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
