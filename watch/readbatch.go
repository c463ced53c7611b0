package watch

import (
	"context"
	"net"
	"sync"
	"time"
)

// ReadBatching batches the reads of the API server connection while its
// watches carry only a trickle of events. Each event read alone wakes the
// chain that handles it (the poller, HTTP/2's read loop, the watch's
// decoder, the reflector, and the Go runtime's sysmon with them) on threads
// that had gone to sleep; events read together are handled by threads
// already awake, on a warm cache. Snapshots are taken only every interval,
// so reading a second later changes nothing the receiver sees, as long as
// what arrived before a snapshot is read before it: NextTick says when the
// next one is due, and the connection is read at once from tickLead before
// it until it has been taken.
type ReadBatching struct {
	// Window is how long a connection waits, after a read that waited for
	// data, before it reads again. 0: each read as the data arrives.
	Window time.Duration
	// NextTick returns when the next snapshot is due (zero: unknown). Nil:
	// no snapshot schedule to keep.
	NextTick func() time.Time
}

const (
	// tickLead is how long before a due snapshot a connection stops
	// waiting, so that events read then are rendered before it is taken:
	// a batch of events takes a few milliseconds to handle.
	tickLead = 100 * time.Millisecond
	// bulkBytes read within a window mean bulk (a list, a watch's initial
	// events, a relist): the connection is read as fast as it delivers.
	bulkBytes = 256 << 10
	// streamGap is how long a read must wait for its data to count as one
	// that waited: one that finds data buffered returns within
	// microseconds, and in a stream (a list, or a burst of events) the next
	// data comes within a round trip, even when small buffers make each
	// wait let little pile up. Events a trickle apart come further apart.
	streamGap = 5 * time.Millisecond
)

// dialer returns a dial function for rest.Config.Dial that wraps each
// connection in a batchedConn, or nil when Window is 0.
func (b ReadBatching) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if b.Window <= 0 {
		return nil
	}
	// The dialer client-go uses when Dial is not set.
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newBatchedConn(c, b, time.Now), nil
	}
}

// batchedConn is a connection whose reads, after one that waited for data,
// wait out the rest of the window (while the traffic is below bulkBytes a
// window and no snapshot is due within tickLead), so that whatever arrives
// meanwhile is read at once. Reads are not safe for concurrent use;
// the TLS and HTTP layers above never read concurrently.
type batchedConn struct {
	net.Conn
	b   ReadBatching
	now func() time.Time

	// windowStart and windowBytes count the bytes read since the window
	// began, lastWindowBytes those of the window before it (0 if a window
	// with no read came between); waited says the last read waited,
	// lastRead is when it returned.
	windowStart     time.Time
	windowBytes     int
	lastWindowBytes int
	waited          bool
	lastRead        time.Time

	closeOnce sync.Once
	closed    chan struct{}
}

func newBatchedConn(c net.Conn, b ReadBatching, now func() time.Time) *batchedConn {
	return &batchedConn{Conn: c, b: b, now: now, closed: make(chan struct{})}
}

// Read waits as the type says, then reads.
func (c *batchedConn) Read(p []byte) (int, error) {
	now := c.now()
	if since := now.Sub(c.windowStart); since >= c.b.Window {
		c.lastWindowBytes = c.windowBytes
		if since >= 2*c.b.Window {
			c.lastWindowBytes = 0
		}
		c.windowStart, c.windowBytes = now, 0
	}
	start := now
	if d := c.wait(now); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.closed:
			t.Stop()
		}
		start = c.now()
	}
	n, err := c.Conn.Read(p)
	c.lastRead = c.now()
	c.waited = c.lastRead.Sub(start) >= streamGap
	c.windowBytes += n
	return n, err
}

// wait is how long a read at now waits before it reads: until a window
// after the last read, if that one waited, neither this window's traffic
// nor the last one's is bulk (a transfer that keeps going is read as fast
// as it comes, however little each wait would let pile up), and no
// snapshot is due sooner.
func (c *batchedConn) wait(now time.Time) time.Duration {
	if !c.waited || c.windowBytes >= bulkBytes || c.lastWindowBytes >= bulkBytes {
		return 0
	}
	until := c.lastRead.Add(c.b.Window)
	if c.b.NextTick != nil {
		if due := c.b.NextTick(); !due.IsZero() && due.Add(-tickLead).Before(until) {
			until = due.Add(-tickLead)
		}
	}
	return until.Sub(now)
}

// Close closes the connection and ends a read's wait.
func (c *batchedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
