package queue

import (
	"context"
	"sync"

	"github.com/kube-state-push/kube-state-push/encode"
)

// ring is one shard's bounded FIFO of samples. Producers block while it is
// full; the shard's sender takes batches from its head.
type ring struct {
	// mu guards buf, head, n and closed.
	mu sync.Mutex
	// buf is the fixed-size storage; samples live at buf[(head+i)%len(buf)].
	buf []encode.Sample
	// head is the index of the oldest sample.
	head int
	// n is the number of samples held.
	n int
	// closed is set when the shard stops accepting samples.
	closed bool
	// notEmpty gets a token when samples are added (capacity 1: a wake-up,
	// not a count).
	notEmpty chan struct{}
	// notFull gets a token when samples are taken.
	notFull chan struct{}
}

func newRing(capacity int) *ring {
	return &ring{
		buf:      make([]encode.Sample, capacity),
		notEmpty: make(chan struct{}, 1),
		notFull:  make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push appends the items' samples in order, blocking while the ring is
// full. It returns how many were appended: fewer than len(s) only when ctx
// ended or the ring was closed.
func (r *ring) push(ctx context.Context, s []Item) int {
	done := 0
	for done < len(s) {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return done
		}
		k := min(len(r.buf)-r.n, len(s)-done)
		// The free space is at most two runs: from the tail to the end
		// of buf, then from its start.
		tail := r.head + r.n
		if tail >= len(r.buf) {
			tail -= len(r.buf)
		}
		first := putSamples(r.buf[tail:min(tail+k, len(r.buf))], s[done:])
		putSamples(r.buf[:k-first], s[done+first:])
		r.n += k
		r.mu.Unlock()
		if k > 0 {
			done += k
			signal(r.notEmpty)
			continue
		}
		select {
		case <-r.notFull:
		case <-ctx.Done():
			return done
		}
	}
	return done
}

// putSamples fills dst with the samples of src's first items and returns
// how many it wrote, len(dst); src holds at least that many.
func putSamples(dst []encode.Sample, src []Item) int {
	for i := range dst {
		dst[i] = src[i].Sample
	}
	return len(dst)
}

// take appends up to most samples from the head to dst.
func (r *ring) take(dst []encode.Sample, most int) []encode.Sample {
	r.mu.Lock()
	k := min(most, r.n)
	// The samples taken are at most two runs, as in push; their slots are
	// cleared to release the labels for the GC.
	first := r.buf[r.head:min(r.head+k, len(r.buf))]
	second := r.buf[:k-len(first)]
	dst = append(append(dst, first...), second...)
	clear(first)
	clear(second)
	if r.head += k; r.head >= len(r.buf) {
		r.head -= len(r.buf)
	}
	r.n -= k
	r.mu.Unlock()
	if k > 0 {
		signal(r.notFull)
	}
	return dst
}

// len returns the number of samples held.
func (r *ring) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// close stops accepting samples, discards the samples still held (the
// caller counts them as dropped, so the shard must not take and send them
// too) and wakes a blocked feed. It returns the number discarded.
func (r *ring) close() int {
	r.mu.Lock()
	r.closed = true
	n := r.n
	clear(r.buf) // release the labels for the GC
	r.head, r.n = 0, 0
	r.mu.Unlock()
	signal(r.notFull)
	signal(r.notEmpty)
	return n
}
