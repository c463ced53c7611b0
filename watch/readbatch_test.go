package watch

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadBatchingWait checks when a read waits, and for how long, with a
// clock the test sets.
func TestReadBatchingWait(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var due time.Time
	b := ReadBatching{Window: time.Second, NextTick: func() time.Time { return due }}
	c := newBatchedConn(nil, b, nil)
	c.lastRead = t0
	now := t0.Add(time.Millisecond)

	c.waited = false
	require.Zero(t, c.wait(now), "the last read found data waiting: read on")

	c.waited = true
	require.Equal(t, 999*time.Millisecond, c.wait(now), "the last read waited: wait out the window after it")
	require.LessOrEqual(t, c.wait(t0.Add(2*time.Second)), time.Duration(0), "the window has passed")

	c.windowBytes = bulkBytes
	require.Zero(t, c.wait(now), "bulk: read as fast as it comes")
	c.windowBytes, c.lastWindowBytes = 0, bulkBytes
	require.Zero(t, c.wait(now), "bulk in the window before: still bulk")
	c.windowBytes, c.lastWindowBytes = bulkBytes-1, 0

	due = t0.Add(500 * time.Millisecond)
	require.Equal(t, 500*time.Millisecond-tickLead-time.Millisecond, c.wait(now), "a snapshot is due before the window ends: read tickLead before it")
	due = t0.Add(tickLead / 2)
	require.LessOrEqual(t, c.wait(now), time.Duration(0), "a snapshot is due within tickLead: read at once")
	due = t0.Add(5 * time.Second)
	require.Equal(t, 999*time.Millisecond, c.wait(now), "the next snapshot is after the window")
	due = time.Time{}
	require.Equal(t, 999*time.Millisecond, c.wait(now), "no schedule known")

	require.Nil(t, ReadBatching{}.dialer(), "a window of 0 leaves client-go's dialer")
}

// loopback returns the two ends of a TCP connection on 127.0.0.1, the
// reading end wrapped for batching.
func loopback(t *testing.T, b ReadBatching) (reader *batchedConn, writer net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	writer = <-accepted
	require.NotNil(t, writer)
	reader = newBatchedConn(raw, b, time.Now)
	t.Cleanup(func() { reader.Close(); writer.Close() })
	return reader, writer
}

// TestReadBatchingTrickle: after a read that waited, what arrives within
// the window is read in one read at its end.
func TestReadBatchingTrickle(t *testing.T) {
	const window = 300 * time.Millisecond
	r, w := loopback(t, ReadBatching{Window: window})
	go func() {
		time.Sleep(20 * time.Millisecond) // the first read waits for it
		_, _ = w.Write([]byte("one;"))
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write([]byte("two;"))
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write([]byte("three;"))
	}()
	buf := make([]byte, 1024)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "one;", string(buf[:n]))
	first := time.Now()
	require.True(t, r.waited)

	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "two;three;", string(buf[:n]), "both events that arrived within the window, in one read")
	require.GreaterOrEqual(t, time.Since(first), window-10*time.Millisecond, "the read waited out the window")
}

// TestReadBatchingBulk: a stream is read as fast as it comes, even where
// a wait would let little pile up (small socket buffers here, and a writer
// slower than the reader, so that reads wait for it; a list through TLS
// reads a record, at most 16 KiB, at a time).
func TestReadBatchingBulk(t *testing.T) {
	const window = 300 * time.Millisecond
	r, w := loopback(t, ReadBatching{Window: window})
	require.NoError(t, r.Conn.(*net.TCPConn).SetReadBuffer(32<<10))
	require.NoError(t, w.(*net.TCPConn).SetWriteBuffer(32<<10))
	// Written more slowly than it is read, so that reads wait for it.
	const size, chunk = 4 << 20, 64 << 10
	go func() {
		for range size / chunk {
			time.Sleep(time.Millisecond)
			if _, err := w.Write(make([]byte, chunk)); err != nil {
				return
			}
		}
		w.Close()
	}()
	start := time.Now()
	waits := 0
	buf := make([]byte, 16<<10)
	for total := 0; ; {
		if r.wait(time.Now()) > 0 {
			waits++
		}
		n, err := r.Read(buf)
		total += n
		if errors.Is(err, io.EOF) {
			require.Equal(t, size, total)
			break
		}
		require.NoError(t, err)
	}
	// The read after the first waits out a window; in the stream, reads
	// wait less than streamGap for their data and read on. Were each read
	// that waited at all followed by a window, small buffers would hold
	// the stream to about their size a window.
	require.LessOrEqual(t, waits, 3, "reads that waited out a window")
	t.Logf("%d waits, %s", waits, time.Since(start))
}

// TestReadBatchingClose: closing the connection ends a read's wait.
func TestReadBatchingClose(t *testing.T) {
	r, w := loopback(t, ReadBatching{Window: time.Hour})
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write([]byte("x"))
	}()
	buf := make([]byte, 16)
	_, err := r.Read(buf)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(buf)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, r.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a read kept waiting after Close")
	}
}
