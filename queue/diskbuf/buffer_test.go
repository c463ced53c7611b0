package diskbuf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// smallConfig has 4 KiB segments so that tests rotate often.
func smallConfig(dir string) Config {
	c := DefaultConfig
	c.Dir = dir
	c.MaxSegmentSize = minSegmentSize
	return c
}

func open(t *testing.T, cfg Config) *Buffer {
	t.Helper()
	b, err := Open(cfg)
	require.NoError(t, err)
	return b
}

// record returns a distinct, recognisable record of n bytes.
func record(i, n int) []byte {
	r := bytes.Repeat([]byte{byte(i)}, n)
	copy(r, fmt.Sprintf("rec-%06d:", i))
	return r
}

func appendN(t *testing.T, b *Buffer, from, to, size int) {
	t.Helper()
	for i := from; i < to; i++ {
		dropped, err := b.Append(record(i, size))
		require.NoError(t, err)
		require.Zero(t, dropped)
	}
}

// readAll peeks and acks until the buffer is empty.
func readAll(t *testing.T, b *Buffer) [][]byte {
	t.Helper()
	var got [][]byte
	for {
		r, err := b.Peek()
		if errors.Is(err, ErrEmpty) {
			return got
		}
		require.NoError(t, err)
		got = append(got, r)
		require.NoError(t, b.Ack())
	}
}

// requireRecords checks that got holds records from..to-1 of the given size.
func requireRecords(t *testing.T, got [][]byte, from, to, size int) {
	t.Helper()
	require.Len(t, got, to-from)
	for i, r := range got {
		require.Equal(t, record(from+i, size), r, "record %d", i)
	}
}

func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	require.NoError(t, err)
	return m
}

func TestOrderAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	b := open(t, smallConfig(dir))
	defer b.Close()
	var want [][]byte
	for i := range 200 {
		r := record(i, 20+i*7%900)
		want = append(want, r)
		_, err := b.Append(r)
		require.NoError(t, err)
	}
	st := b.Stats()
	require.Greater(t, st.Segments, 10, "several rotations")
	require.Len(t, segFiles(t, dir), st.Segments)

	r, err := b.Peek()
	require.NoError(t, err)
	again, err := b.Peek()
	require.NoError(t, err)
	require.Equal(t, r, again, "Peek without Ack returns the same record")

	require.Equal(t, want, readAll(t, b))
	st = b.Stats()
	require.Equal(t, uint64(200), st.Appended)
	require.Equal(t, uint64(200), st.Acked)
	require.Zero(t, st.Corrupt)
	require.Equal(t, 1, st.Segments, "read segments are deleted")
	require.Len(t, segFiles(t, dir), 1)

	_, err = b.Append(record(1000, 10))
	require.NoError(t, err)
	requireRecords(t, readAll(t, b), 1000, 1001, 10)
}

func TestTooLarge(t *testing.T) {
	b := open(t, smallConfig(t.TempDir()))
	defer b.Close()
	_, err := b.Append(make([]byte, minSegmentSize))
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = b.Append(make([]byte, minSegmentSize-6)) // 2-byte length, 4-byte CRC
	require.NoError(t, err, "a record that exactly fills a segment fits")
}

func TestRestartResumesAfterAck(t *testing.T) {
	dir := t.TempDir()
	b := open(t, smallConfig(dir))
	appendN(t, b, 0, 30, 500) // several segments
	got := make([][]byte, 0, 12)
	for range 12 {
		r, err := b.Peek()
		require.NoError(t, err)
		got = append(got, r)
		require.NoError(t, b.Ack())
	}
	requireRecords(t, got, 0, 12, 500)
	r, err := b.Peek() // in flight when the process stops
	require.NoError(t, err)
	require.Equal(t, record(12, 500), r)
	require.NoError(t, b.Close())

	b = open(t, smallConfig(dir))
	appendN(t, b, 30, 35, 500)
	requireRecords(t, readAll(t, b), 12, 35, 500)
	require.Zero(t, b.Stats().Corrupt)
	require.NoError(t, b.Close())

	b = open(t, smallConfig(dir))
	defer b.Close()
	_, err = b.Peek()
	require.ErrorIs(t, err, ErrEmpty, "everything was acknowledged")
}

// TestRestartAfterKill copies the directory while the buffer is still open,
// as a SIGKILL would leave it, and opens the copy.
func TestRestartAfterKill(t *testing.T) {
	dir := t.TempDir()
	b := open(t, smallConfig(dir))
	defer b.Close()
	appendN(t, b, 0, 20, 300)
	for range 5 {
		_, err := b.Peek()
		require.NoError(t, err)
		require.NoError(t, b.Ack())
	}
	_, err := b.Peek()
	require.NoError(t, err)

	killed := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(killed, e.Name()), data, 0o644))
	}
	b2 := open(t, smallConfig(killed))
	defer b2.Close()
	requireRecords(t, readAll(t, b2), 5, 20, 300)
}

func TestSizeCapDropsOldestSegments(t *testing.T) {
	const size = 1000 // frame 1006 bytes: 4 records per 4 KiB segment
	cfg := smallConfig(t.TempDir())
	cfg.MaxSize = 3 * minSegmentSize // room for two full segments and the head
	b := open(t, cfg)
	defer b.Close()

	dropped := 0
	for i := range 40 {
		n, err := b.Append(record(i, size))
		require.NoError(t, err)
		dropped += n
		require.LessOrEqual(t, b.Stats().Bytes, cfg.MaxSize)
	}
	require.Equal(t, 28, dropped)
	require.Equal(t, uint64(28), b.Stats().Dropped)
	requireRecords(t, readAll(t, b), 28, 40, size)
}

func TestSizeCapSparesRecordsInFlight(t *testing.T) {
	const size = 1000
	cfg := smallConfig(t.TempDir())
	cfg.MaxSize = 3 * minSegmentSize
	var droppedRecs [][]byte
	cfg.OnDrop = func(rec []byte) { droppedRecs = append(droppedRecs, bytes.Clone(rec)) }
	b := open(t, cfg)
	defer b.Close()
	appendN(t, b, 0, 12, size) // three full segments: 0-3, 4-7, 8-11
	for range 2 {
		_, err := b.Peek()
		require.NoError(t, err)
		require.NoError(t, b.Ack())
	}
	r, err := b.Peek() // record 2 in flight: its segment stays
	require.NoError(t, err)
	require.Equal(t, record(2, size), r)

	n, err := b.Append(record(12, size))
	require.NoError(t, err)
	require.Equal(t, 4, n, "the next segment, records 4 to 7, went instead")
	requireRecords(t, droppedRecs, 4, 8, size)
	require.LessOrEqual(t, b.Stats().Bytes, cfg.MaxSize)
	require.NoError(t, b.Ack())
	got := readAll(t, b)
	requireRecords(t, got[:1], 3, 4, size)
	requireRecords(t, got[1:], 8, 13, size)
	st := b.Stats()
	require.Equal(t, uint64(4), st.Dropped)
	require.Equal(t, uint64(2+1+6), st.Acked)

	// Nothing in flight: the oldest segment goes, counted from the read
	// position.
	droppedRecs = nil
	appendN(t, b, 13, 21, size)
	_, err = b.Peek()
	require.NoError(t, err)
	require.NoError(t, b.Ack()) // record 13 read
	require.NoError(t, b.Close())
	cfg.MaxSize = 2 * minSegmentSize // a smaller cap at the next start
	b = open(t, cfg)
	defer b.Close()
	n, err = b.Append(record(21, size))
	require.NoError(t, err)
	require.Positive(t, n)
	require.Equal(t, n, len(droppedRecs))
	require.Equal(t, record(14, size), droppedRecs[0], "acknowledged records are not counted")
	require.LessOrEqual(t, b.Stats().Bytes, int64(2*minSegmentSize))
}

func TestPeekNext(t *testing.T) {
	const size = 1000 // 4 records per segment
	cfg := smallConfig(t.TempDir())
	b := open(t, cfg)
	_, err := b.PeekNext(nil)
	require.ErrorIs(t, err, ErrEmpty, "nothing peeked")
	appendN(t, b, 0, 10, size)
	_, err = b.PeekNext(nil)
	require.ErrorIs(t, err, ErrEmpty, "Peek comes first")

	first, err := b.Peek()
	require.NoError(t, err)
	got := [][]byte{first}
	for {
		r, err := b.PeekNext(nil)
		if errors.Is(err, ErrEmpty) {
			break
		}
		require.NoError(t, err)
		got = append(got, r)
	}
	requireRecords(t, got, 0, 4, size) // stops at the end of the segment
	again, err := b.Peek()
	require.NoError(t, err)
	require.Equal(t, first, again, "Peek still returns the oldest")
	require.NoError(t, b.Ack())
	require.Equal(t, uint64(4), b.Stats().Acked, "Ack covers every record handed out")

	// Two more in flight when the process stops: both come again.
	_, err = b.Peek()
	require.NoError(t, err)
	_, err = b.PeekNext(func([]byte) bool { return false })
	require.ErrorIs(t, err, ErrEmpty, "refused")
	r, err := b.PeekNext(nil)
	require.NoError(t, err)
	require.Equal(t, record(5, size), r, "the refused record was not handed out")
	require.NoError(t, b.Close())
	b = open(t, cfg)
	defer b.Close()
	requireRecords(t, readAll(t, b), 4, 10, size)
}

func TestMarkInFlight(t *testing.T) {
	const size = 1000 // 4 records per segment
	cfg := smallConfig(t.TempDir())
	b := open(t, cfg)
	defer b.Close()
	appendN(t, b, 0, 10, size)
	require.False(t, b.Replaying())
	_, err := b.Peek()
	require.NoError(t, err)
	for range 2 {
		_, err := b.PeekNext(nil)
		require.NoError(t, err)
	}
	require.NoError(t, b.MarkInFlight()) // records 0-2 sent together
	_, err = b.PeekNext(nil)
	require.ErrorIs(t, err, ErrEmpty, "a marked batch does not grow")

	// Killed while they were in flight: the copy replays exactly them.
	killed := copyDir(t, cfg.Dir)
	kcfg := cfg
	kcfg.Dir = killed
	k := open(t, kcfg)
	require.True(t, k.Replaying())
	first, err := k.Peek()
	require.NoError(t, err)
	got := [][]byte{first}
	for {
		r, err := k.PeekNext(nil)
		if errors.Is(err, ErrEmpty) {
			break
		}
		require.NoError(t, err)
		got = append(got, r)
	}
	requireRecords(t, got, 0, 3, size)
	require.NoError(t, k.Ack())
	require.False(t, k.Replaying())
	r, err := k.Peek()
	require.NoError(t, err)
	require.Equal(t, record(3, size), r)
	require.NoError(t, k.Close())

	// Acknowledged: the mark is gone.
	require.NoError(t, b.Ack())
	require.False(t, b.Replaying())
	require.NoError(t, b.Close())
	b = open(t, cfg)
	defer b.Close()
	require.False(t, b.Replaying())
	requireRecords(t, readAll(t, b), 3, 10, size)
}

// copyDir copies the files of dir, as a killed process leaves them, into
// a new temporary directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

func TestForEach(t *testing.T) {
	b := open(t, smallConfig(t.TempDir()))
	defer b.Close()
	appendN(t, b, 0, 10, 700)
	for range 3 {
		_, err := b.Peek()
		require.NoError(t, err)
		require.NoError(t, b.Ack())
	}
	var got [][]byte
	require.NoError(t, b.ForEach(func(rec []byte) { got = append(got, bytes.Clone(rec)) }))
	requireRecords(t, got, 3, 10, 700)
	requireRecords(t, readAll(t, b), 3, 10, 700) // the read position did not move
}

// writeClosed appends records from..to-1 and closes the buffer.
func writeClosed(t *testing.T, cfg Config, from, to, size int) {
	t.Helper()
	b := open(t, cfg)
	appendN(t, b, from, to, size)
	require.NoError(t, b.Close())
}

func TestTruncatedTailIsSkipped(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	writeClosed(t, cfg, 0, 6, 1000) // segments 1 (0-3) and 2 (4-5)
	seg2 := segmentPath(cfg.Dir, 2)
	fi, err := os.Stat(seg2)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg2, fi.Size()-3)) // a crash mid-write

	b := open(t, cfg)
	defer b.Close()
	appendN(t, b, 6, 8, 1000)
	got := readAll(t, b)
	require.Len(t, got, 7)
	requireRecords(t, got[:5], 0, 5, 1000)
	requireRecords(t, got[5:], 6, 8, 1000)

	st := b.Stats()
	require.Equal(t, uint64(1), st.Corrupt)
	require.Equal(t, segmentName(2), st.LastCorrupt.File)
	require.Equal(t, int64(1006), st.LastCorrupt.Offset)
	require.Equal(t, errTorn.Error(), st.LastCorrupt.Reason)
}

func TestFlippedByteIsSkipped(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	writeClosed(t, cfg, 0, 6, 1000)
	seg1 := segmentPath(cfg.Dir, 1)
	data, err := os.ReadFile(seg1)
	require.NoError(t, err)
	data[1006+500] ^= 0x40 // inside record 1's payload
	require.NoError(t, os.WriteFile(seg1, data, 0o644))

	b := open(t, cfg)
	defer b.Close()
	got := readAll(t, b)
	require.Len(t, got, 3, "record 0, then segment 2")
	requireRecords(t, got[:1], 0, 1, 1000)
	requireRecords(t, got[1:], 4, 6, 1000)
	st := b.Stats()
	require.Equal(t, uint64(1), st.Corrupt)
	var ce *CorruptError
	require.ErrorAs(t, error(st.LastCorrupt), &ce)
	require.Equal(t, segmentName(1), ce.File)
	require.Equal(t, errBadCRC.Error(), ce.Reason)
}

func TestGarbageLengthIsSkipped(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	writeClosed(t, cfg, 0, 2, 10)
	// An 11-byte varint (overflow) then a length far past the file.
	seg1 := segmentPath(cfg.Dir, 1)
	require.NoError(t, os.WriteFile(seg1, bytes.Repeat([]byte{0xff}, 11), 0o644))
	seg2 := segmentPath(cfg.Dir, 3)
	require.NoError(t, os.WriteFile(seg2, []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}, 0o644))
	b := open(t, cfg)
	defer b.Close()
	appendN(t, b, 7, 8, 10)
	requireRecords(t, readAll(t, b), 7, 8, 10)
	require.Equal(t, uint64(2), b.Stats().Corrupt)
}

func TestCorruptCheckpointFallsBackToOldest(t *testing.T) {
	for name, write := range map[string]func(dir string) error{
		"garbage": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, checkpointName), []byte("not a checkpoint"), 0o644)
		},
		"bad crc": func(dir string) error {
			b := encodeCheckpoint(position{seg: 2, off: 0})
			b[10] ^= 1
			return os.WriteFile(filepath.Join(dir, checkpointName), b, 0o644)
		},
		"missing segment": func(dir string) error {
			return writeCheckpoint(dir, position{seg: 99}, false)
		},
		"offset past end": func(dir string) error {
			return writeCheckpoint(dir, position{seg: 1, off: 1 << 20}, false)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := smallConfig(t.TempDir())
			writeClosed(t, cfg, 0, 6, 1000)
			require.NoError(t, write(cfg.Dir))
			b := open(t, cfg)
			defer b.Close()
			requireRecords(t, readAll(t, b), 0, 6, 1000)
			st := b.Stats()
			require.Equal(t, uint64(1), st.Corrupt)
			require.Equal(t, checkpointName, st.LastCorrupt.File)
		})
	}
}

func TestCorruptHeadIsSealed(t *testing.T) {
	b := open(t, smallConfig(t.TempDir()))
	defer b.Close()
	appendN(t, b, 0, 2, 100)
	// Corrupt the live head behind the buffer's back.
	f, err := os.OpenFile(segmentPath(b.cfg.Dir, 1), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xAA}, 50)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = b.Peek()
	require.ErrorIs(t, err, ErrEmpty)
	require.Equal(t, uint64(1), b.Stats().Corrupt)
	appendN(t, b, 2, 3, 100)
	requireRecords(t, readAll(t, b), 2, 3, 100)
}

func TestClosed(t *testing.T) {
	b := open(t, smallConfig(t.TempDir()))
	require.NoError(t, b.Close())
	_, err := b.Append([]byte("x"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = b.Peek()
	require.ErrorIs(t, err, ErrClosed)
	_, err = b.PeekNext(nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, b.ForEach(func([]byte) {}), ErrClosed)
	require.ErrorIs(t, b.MarkInFlight(), ErrClosed)
	require.ErrorIs(t, b.Ack(), ErrClosed)
	require.ErrorIs(t, b.Sync(), ErrClosed)
	require.ErrorIs(t, b.Close(), ErrClosed)
}

func TestSyncPolicies(t *testing.T) {
	for _, p := range []SyncPolicy{SyncOnRotate, SyncAlways, SyncNever} {
		t.Run(string(p), func(t *testing.T) {
			cfg := smallConfig(t.TempDir())
			cfg.Sync = p
			writeClosed(t, cfg, 0, 10, 700)
			b := open(t, cfg)
			defer b.Close()
			require.NoError(t, b.Sync())
			requireRecords(t, readAll(t, b), 0, 10, 700)
		})
	}
}

func TestConcurrentAppendAndRead(t *testing.T) {
	const n = 2000
	b := open(t, smallConfig(t.TempDir()))
	defer b.Close()
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := b.Append(record(i, 10+i%200)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := 0; i < n; {
		r, err := b.Peek()
		if errors.Is(err, ErrEmpty) {
			<-b.NotEmpty()
			continue
		}
		require.NoError(t, err)
		require.Equal(t, record(i, 10+i%200), r)
		require.NoError(t, b.Ack())
		i++
	}
	require.NoError(t, <-errc)
	st := b.Stats()
	require.Equal(t, uint64(n), st.Acked)
	require.Zero(t, st.Corrupt)
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod func(*Config)
		key string
	}{
		"ok":             {mod: func(*Config) {}},
		"no dir":         {mod: func(c *Config) { c.Dir = "" }, key: "dir"},
		"small segment":  {mod: func(c *Config) { c.MaxSegmentSize = 100 }, key: "max_segment_size_bytes"},
		"negative cap":   {mod: func(c *Config) { c.MaxSize = -1 }, key: "max_size_bytes"},
		"cap < 2 segs":   {mod: func(c *Config) { c.MaxSize = c.MaxSegmentSize }, key: "max_size_bytes"},
		"unknown policy": {mod: func(c *Config) { c.Sync = "sometimes" }, key: "sync"},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig
			c.Dir = "/x"
			tc.mod(&c)
			err := c.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.key+": ")
		})
	}
}
