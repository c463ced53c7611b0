package queue

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// earlyAnswer is a transport that answers the first request 413 before
// reading its body, and keeps the body unread, as net/http's writer
// goroutine may go on reading it after the answer; later requests are read
// and answered 204.
type earlyAnswer struct {
	// mu guards n, answered and got.
	mu sync.Mutex
	// n counts requests; answered those answered.
	n, answered int
	// got are the samples of the requests read at once, in order.
	got [][]gotSample
	// held is the first request's body, still unread.
	held chan io.ReadCloser
}

func (a *earlyAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	i := a.n
	a.n++
	a.mu.Unlock()
	code := http.StatusNoContent
	if i == 0 {
		a.held <- r.Body
		code = http.StatusRequestEntityTooLarge
	} else {
		samples, err := decodeBody(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.got = append(a.got, samples)
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.answered++
	a.mu.Unlock()
	return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// count returns the number of requests answered.
func (a *earlyAnswer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answered
}

// A body the transport still reads after an early answer is never encoded
// into again: not by the halves of a 413 split, nor by the shard's next
// batch. (With the race detector, a reuse is also a data race.)
func TestBodyNotReusedWhileRead(t *testing.T) {
	rt := &earlyAnswer{held: make(chan io.ReadCloser, 1)}
	e, m, err := buildTestEndpoint(t, "http://receiver.invalid/api/v1/write", func(c *Config) {
		c.QueueConfig.MinShards, c.QueueConfig.MaxShards = 1, 1
	}, func(e *Endpoint) { e.sender.client.HTTPClient.Transport = rt })
	require.NoError(t, err)

	first := items(4, 1_700_000_000_000)
	require.Equal(t, 4, e.appendItems(t.Context(), first))
	e.flush()
	require.Eventually(t, func() bool { return rt.count() == 3 }, 5*time.Second, time.Millisecond, "413, then both halves")
	// The same series and sizes again: a reused body would be overwritten
	// in place.
	second := items(4, 1_700_000_001_000)
	require.Equal(t, 4, e.appendItems(t.Context(), second))
	e.flush()
	require.Eventually(t, func() bool { return rt.count() == 4 }, 5*time.Second, time.Millisecond)

	held := <-rt.held
	samples, err := decodeBody(held)
	require.NoError(t, err)
	require.NoError(t, held.Close())
	require.Equal(t, wantSamples(first), samples, "the body answered early still holds its own batch")
	rt.mu.Lock()
	all := wantSamples(first)
	require.Equal(t, [][]gotSample{all[:2], all[2:], wantSamples(second)}, rt.got)
	rt.mu.Unlock()
	require.NoError(t, stop(t, e, 5*time.Second))
	require.Equal(t, 8.0, counter(t, m.samplesSent))
}

// A released body is reused; one a reader still holds is not, until the
// reader is closed.
func TestBodyPool(t *testing.T) {
	var p bodyPool
	a := p.get()
	a.buf = append(a.buf, "request a"...)
	r, err := a.open()
	require.NoError(t, err)
	a.release() // the answer is in, the transport still reads

	b := p.get()
	require.NotSame(t, a, b, "a is still being read")
	b.release()
	require.Same(t, b, p.get(), "released, so reused")

	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "request a", string(got))
	require.NoError(t, r.(io.Closer).Close())
	require.NoError(t, r.(io.Closer).Close(), "a second Close releases nothing more")
	c := p.get()
	require.Same(t, a, c, "every reader closed: back in the free list")
	require.Empty(t, c.buf)
	require.Equal(t, int32(1), c.refs.Load())

	// The free list is bounded.
	for range 5 {
		p.put(&reqBody{pool: &p})
	}
	require.Len(t, p.free, maxFreeBodies)

	// Bytes that are never written again have no pool.
	f := fixedBody([]byte("x"))
	f.release()
	require.Len(t, p.free, maxFreeBodies)
}

// A shard that sends batch after batch allocates no new body.
func TestBodySteadyState(t *testing.T) {
	var p bodyPool
	first := p.get()
	first.release()
	for range 100 {
		b := p.get()
		require.Same(t, first, b)
		r, err := b.open()
		require.NoError(t, err)
		require.NoError(t, r.(io.Closer).Close())
		b.release()
	}
}
