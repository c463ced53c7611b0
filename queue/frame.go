package queue

import (
	"sync"
	"sync/atomic"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Frame is a snapshot as offered to the endpoints: one encode.Frame that
// every endpoint shares, back in its pool once each has released it.
type Frame struct {
	encode.Frame
	// refs counts the holders: the snapshot loop while it builds the frame,
	// and each endpoint until it has sent, written or dropped it.
	refs atomic.Int32
	// pool takes the frame back; nil for a frame that is not pooled.
	pool *FramePool
}

// hold adds a holder.
func (f *Frame) hold() { f.refs.Add(1) }

// Release drops a holder; the last one returns the frame to its pool.
func (f *Frame) Release() {
	if f.refs.Add(-1) == 0 && f.pool != nil {
		f.pool.put(f)
	}
}

// FramePool keeps a few released frames for reuse, so that the Objects and
// Stale slices of a snapshot are not allocated again every tick. The zero
// value is ready to use.
type FramePool struct {
	// mu guards free.
	mu sync.Mutex
	// free are released frames, emptied.
	free []*Frame
}

// framePoolKeep is how many released frames a pool keeps.
const framePoolKeep = 4

// Get returns an empty frame held once, by the caller, who releases it
// once it has offered it to every endpoint.
func (p *FramePool) Get() *Frame {
	p.mu.Lock()
	var f *Frame
	if n := len(p.free); n > 0 {
		f = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if f == nil {
		f = &Frame{pool: p}
	}
	f.refs.Store(1)
	return f
}

func (p *FramePool) put(f *Frame) {
	f.Reset()
	p.mu.Lock()
	if len(p.free) < framePoolKeep {
		p.free = append(p.free, f)
	}
	p.mu.Unlock()
}
