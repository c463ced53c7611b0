package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
)

// An endpoint takes frames through its feed (Endpoint.Offer), which never
// blocks the snapshot loop, and hands them, sample by sample, to the
// shards on a goroutine of its own. So a dead, slow or throttling endpoint
// holds back only its own feed: never a snapshot, another endpoint, a
// reload, a leader takeover, or the stop beyond its deadline.
//
//	snapshot loop ──Offer──► feed (frames waiting) ──goroutine──► relabeler ─► shards
//
// A feed holds a bounded number of frames waiting. When it is full, the
// oldest waiting frame is dropped whole and counted (reason queue_full),
// never a part of one; its staleness markers are carried to the next frame
// pushed, so that series that ended in it still end.
//
// With a disk buffer the feed's goroutine writes each frame to the buffer
// instead, which never waits for the receiver, and a second goroutine
// replays the buffer's frames to the shards, oldest first, each
// acknowledged there once delivered (diskbuffer.go):
//
//	feed (frames waiting) ──writer──► disk buffer ──replayer──► relabeler ─► shards

// appender is what a feed hands samples to: the endpoint's shards, or a
// relabeler in front of them, which passes both calls on.
type appender interface {
	// appendItems queues items; it may block while a shard's ring is
	// full, until ctx ends. It returns how many were queued.
	appendItems(ctx context.Context, items []Item) int
	// flush says the frame's last sample was appended, so that its last,
	// partial batch is sent at once.
	flush()
}

// replayAhead is how many frames the replayer keeps handed to the endpoint
// and not yet delivered (Endpoint.inFlight).
const replayAhead = 2

// feed hands one endpoint its frames; see the top of this file.
type feed struct {
	// app is the endpoint's shards, behind its relabeler if it has one.
	app appender
	// drop counts samples dropped before they were appended.
	drop func(reason string, samples int)
	// disk is the endpoint, when it has a disk buffer; nil keeps frames in
	// memory.
	disk *Endpoint
	// newestFirst is backfill: newest_first.
	newestFirst bool
	// limit returns how many frames may wait; read at every offer, as
	// snapshot_interval may change on a reload.
	limit func() int

	// mu guards pending, carry, closed and started.
	mu sync.Mutex
	// pending are the frames waiting, oldest first.
	pending []*Frame
	// carry holds the staleness markers of frames dropped since the last
	// frame pushed.
	carry []encode.Stale
	// closed is set by stop: no more frames are taken.
	closed bool
	// started is set by start, and by stop of a feed never started.
	started bool
	// wake gets a token when a frame is offered or the feed is closed.
	wake chan struct{}

	// ctx is the context of appendItems; cancel ends it at the stop deadline.
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
	// thin thins the backlog the replayer sends (backfill_resolution);
	// nil sends it in full.
	thin *thinner
	// With backfill: newest_first and a disk buffer, live holds the newest
	// frame written while there was a backlog (guarded by mu), for the
	// replayer to send ahead of it; liveReady gets a token when it is set.
	live      *Frame
	liveReady chan struct{}
	// fresh is set (guarded by mu) when a frame was offered since next
	// last took the newest one: with newest_first and no disk buffer, next
	// takes that one ahead of the older frames waiting.
	fresh bool
}

// newFeed returns a feed to app, without a disk buffer; start runs it.
func newFeed(app appender, drop func(reason string, samples int), limit func() int) *feed {
	f := &feed{app: app, drop: drop, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{}),
		replayed: make(chan struct{}), liveReady: make(chan struct{}, 1)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// start runs the feed's goroutines.
func (f *feed) start() {
	f.mu.Lock()
	f.started = true
	f.mu.Unlock()
	if f.disk == nil {
		close(f.replayed)
		go f.run()
		return
	}
	go f.write()
	go f.runReplay()
}

// offer queues fr for the endpoint. When limit frames already wait, the
// oldest is dropped whole and counted.
func (f *feed) offer(fr *Frame) {
	fr.hold()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		fr.Release()
		return
	}
	var dropped *Frame
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
		f.drop(ReasonQueueFull, dropped.Samples()-len(dropped.Stale))
		dropped.Release()
	}
}

// next returns the oldest waiting frame and the carried staleness markers,
// waiting for one; nil once the feed is closed and empty, or cancelled.
func (f *feed) next() (*Frame, []encode.Stale) {
	for {
		f.mu.Lock()
		if f.ctx.Err() == nil && len(f.pending) > 0 {
			var fr *Frame
			if n := len(f.pending); n > 1 && f.fresh && f.newestFirst && f.disk == nil {
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
			f.drop(ReasonShutdown, want-got)
		}
		fr.Release()
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
		err := f.disk.writeFrame(w) // a failure is counted and logged by the endpoint
		w.Objects = nil
		clear(w.Stale)
		if err == nil && f.newestFirst && f.disk.behind() {
			f.setLive(fr) // the replayer sends it ahead of the backlog
		}
		fr.Release()
	}
}

// setLive makes fr the frame to send ahead of the backlog, in place of an
// older one the replayer has not taken yet (its stored copy follows in
// order with the backlog).
func (f *feed) setLive(fr *Frame) {
	fr.hold()
	f.mu.Lock()
	old := f.live
	f.live = fr
	f.mu.Unlock()
	if old != nil {
		old.Release()
	}
	signal(f.liveReady)
}

// takeLive returns the frame to send ahead of the backlog, if any.
func (f *feed) takeLive() *Frame {
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
	defer fr.Release()
	want := fr.Samples()
	if got := f.replay.push(f.ctx, f.app, &fr.Frame, nil); got < want && f.ctx.Err() != nil {
		return false
	}
	f.disk.pushedLive(&fr.Frame)
	return true
}

// runReplay hands the endpoint the disk buffer's frames, oldest first, each
// acknowledged there once delivered, until the writer has ended and every
// frame is handed out, or until cancelled. A frame cut off by the stop
// deadline stays in the buffer for the next start. With backfill_resolution
// an old frame is held until the one after it is read, which tells whether
// it goes in full (thin.go).
func (f *feed) runReplay() {
	defer close(f.replayed)
	defer func() {
		if fr := f.takeLive(); fr != nil {
			fr.Release()
		}
	}()
	writerDone := false
	var held *encode.Frame
	var heldInfo diskbuffer.Info
	for f.ctx.Err() == nil {
		if f.disk.inFlight() >= replayAhead {
			select {
			case <-f.disk.progress():
			case <-f.ctx.Done():
			}
			continue
		}
		if !f.pushLive() {
			return
		}
		fr, info, err := f.disk.nextFrame()
		switch {
		case errors.Is(err, diskbuffer.ErrEmpty):
			if held != nil {
				// Nothing follows it yet: in full.
				if !f.replayFrame(held, heldInfo, 0, false) {
					return
				}
				held = nil
				continue
			}
			if writerDone {
				return
			}
			select {
			case <-f.done:
				writerDone = true // all it wrote is in: one more look
			case <-f.disk.frameReady():
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
		if held != nil {
			if !f.replayFrame(held, heldInfo, fr.Timestamp, true) {
				return // held stays in the buffer, and fr after it
			}
			held = nil
		}
		if f.thin != nil && f.thin.old(fr) {
			held, heldInfo = fr, info
			continue
		}
		if !f.replayFrame(fr, info, 0, false) {
			return
		}
	}
}

// replayFrame hands the endpoint fr, a frame of the disk buffer, unless it
// was sent ahead of the backlog, and says so (framePushed). With
// backfill_resolution and an old frame, next is the timestamp of the frame
// after it, if hasNext. It reports false if the push was cut off by the
// stop deadline: the frame stays in the buffer.
func (f *feed) replayFrame(fr *encode.Frame, info diskbuffer.Info, next int64, hasNext bool) bool {
	t := f.thin
	switch {
	case f.disk.sentLive(fr):
		if t != nil && t.valid {
			t.sentFull(fr) // the receiver has it in full
		}
	case t == nil || !t.old(fr):
		if t != nil {
			t.forget()
		}
		want := fr.Samples()
		if got := f.replay.push(f.ctx, f.app, fr, nil); got < want && f.ctx.Err() != nil {
			return false
		}
	case t.full(fr, next, hasNext):
		want := fr.Samples()
		if got := f.replay.push(f.ctx, f.app, fr, nil); got < want && f.ctx.Err() != nil {
			t.forget()
			return false
		}
		t.sentFull(fr)
	default:
		got, want, thinned := f.replay.pushThinned(f.ctx, f.app, fr, t)
		if got < want && f.ctx.Err() != nil {
			t.forget()
			return false
		}
		t.thinnedFrame(fr, thinned)
	}
	f.disk.framePushed(fr, info)
	return true
}

// stop takes no more frames and waits until those waiting are handed to the
// endpoint (with a disk buffer: written, and every frame of the buffer
// handed over), or until ctx ends: then the one being handed over is cut
// off and the rest are dropped, counted as shutdown. It returns the number
// of samples dropped.
func (f *feed) stop(ctx context.Context) int {
	f.mu.Lock()
	f.closed = true
	idle := !f.started
	f.started = true
	f.mu.Unlock()
	if idle {
		// Never started: no goroutine will close these.
		close(f.done)
		close(f.replayed)
	}
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
		fr.Release()
	}
	if n > 0 {
		f.drop(ReasonShutdown, n)
	}
	return n
}
