package queue

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// An HTTP transport may go on reading a request body after it returned the
// answer: a receiver can answer (413, say) before it has read the request,
// and net/http's writer goroutine then closes the body only once it is done
// with it (http.RoundTripper: "callers wanting to reuse the body for
// subsequent requests must arrange to wait for the Close call"). So a
// request body is never encoded into again until every reader of it is
// closed: each request in flight has its own reqBody, and a shard takes the
// buffers back from a small free list (bodyPool) only once released, so the
// steady state allocates none.

// maxFreeBodies is how many released bodies a shard keeps: one in the steady
// state, a second while an early answer's body is still being read.
const maxFreeBodies = 2

// reqBody is the compressed body of one request and who still uses it.
type reqBody struct {
	// buf is the request. It is written only while refs is 1 (its owner
	// alone holds it) and never after the first release.
	buf []byte
	// pool takes the body back when the last user releases it; nil for
	// bytes that are never written again (a disk buffer record, metadata).
	pool *bodyPool
	// refs counts the users: the owner, from get until it releases the
	// body once the answer is in, and every reader the transport opened
	// and has not closed yet.
	refs atomic.Int32
}

// fixedBody wraps bytes that are never written again as a request body.
func fixedBody(buf []byte) *reqBody {
	b := &reqBody{buf: buf}
	b.refs.Store(1)
	return b
}

// open returns a new reader of the body (a retryablehttp.ReaderFunc: it is
// called for every attempt and by GetBody). Closing it releases it.
func (b *reqBody) open() (io.Reader, error) {
	b.refs.Add(1)
	return &bodyReader{Reader: bytes.NewReader(b.buf), body: b}, nil
}

// release drops one use of the body; the last returns it to its pool.
func (b *reqBody) release() {
	if b.refs.Add(-1) == 0 && b.pool != nil {
		b.pool.put(b)
	}
}

// bodyReader is one reader of a reqBody, handed to the transport.
type bodyReader struct {
	*bytes.Reader
	// body is what Close releases.
	body *reqBody
	// closed makes Close release the body once, however often it is called.
	closed atomic.Bool
}

// Close implements io.Closer.
func (r *bodyReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.body.release()
	}
	return nil
}

// bodyPool is a shard's free list of request bodies. A body is taken by the
// shard's goroutine and given back by whichever goroutine releases it last
// (the shard's, or the transport's when it closes a body late).
type bodyPool struct {
	// mu guards free.
	mu sync.Mutex
	// free are released bodies, at most maxFreeBodies.
	free []*reqBody
}

// get returns a body of length 0 owned by the caller, who releases it once
// the request's answer is in.
func (p *bodyPool) get() *reqBody {
	var b *reqBody
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if b == nil {
		b = &reqBody{pool: p}
	}
	b.buf = b.buf[:0]
	b.refs.Store(1)
	return b
}

// put takes back a body nobody uses any more.
func (p *bodyPool) put(b *reqBody) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxFreeBodies {
		p.free = append(p.free, b)
	}
}
