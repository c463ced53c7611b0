package diskbuffer

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// hugeFrameHeader is a segment's bytes whose first frame header claims a
// record of 32 GiB, with a few bytes after it.
func hugeFrameHeader() []byte {
	b := binary.AppendUvarint(nil, 32<<30)
	b = binary.BigEndian.AppendUint32(b, 0)
	return append(b, formatVersion, kindKey, 0, 0)
}

// hugeBodyRecord is a record of n bytes of compressed body whose snappy
// header claims a body of 32 GiB.
func hugeBodyRecord(n int) []byte {
	rec := appendHeader(nil, header{kind: kindKey})
	rec = binary.AppendUvarint(rec, 32<<30)
	return append(rec, make([]byte, n)...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A record asking for a huge length, in its frame header or as its body's
// decoded length, is refused as corrupt before anything is allocated for
// it, even when the segment holds enough bytes for the ratio check: an
// absolute cap holds.
func TestRecordLengthsCapped(t *testing.T) {
	var err error
	seg := hugeFrameHeader()
	n := allocated(func() { _, _, err = readFrame(bytesReaderAt(seg), 0, 64<<30, nil) })
	require.ErrorIs(t, err, errBadLen)
	require.Less(t, n, uint64(1<<20))

	// 9 MiB of compressed body may claim 32 times that by the ratio
	// alone: 288 MiB, past maxBodyLen.
	rec := append(appendHeader(nil, header{kind: kindKey}), binary.AppendUvarint(nil, 288<<20)...)
	rec = append(rec, make([]byte, 9<<20)...)
	n = allocated(func() { _, _, err = splitRecord(rec) })
	require.ErrorIs(t, err, errBadBody)
	require.Less(t, n, uint64(1<<20), "no body allocated")
}

// A segment whose first record claims 32 GiB is corrupt: counted, its
// frames skipped, the next segment read; nothing huge allocated.
func TestHugeRecordSegmentSkipped(t *testing.T) {
	cfg := testConfig(t)
	l := mustOpen(t, cfg)
	want := appendAll(t, l, newWorld(7, 10), 3)
	require.NoError(t, l.Close())
	// Segment 1 is renamed to 2; a crafted segment 1 goes before it.
	require.NoError(t, os.Rename(filepath.Join(cfg.Dir, segmentName(1)), filepath.Join(cfg.Dir, segmentName(2))))
	require.NoError(t, os.Remove(filepath.Join(cfg.Dir, checkpointName)))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.Dir, segmentName(1)), append(hugeFrameHeader(), make([]byte, 1<<10)...), 0o600))
	var got []canon
	n := allocated(func() {
		l = mustOpen(t, cfg)
		got, _ = readAll(t, l)
	})
	defer l.Close()
	require.Equal(t, want, got)
	require.Equal(t, uint64(1), l.Stats().Corrupt)
	require.Less(t, n, uint64(64<<20))
}

// bytesReaderAt is a []byte as an io.ReaderAt.
type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, os.ErrClosed
	}
	return copy(p, b[off:]), nil
}

// The disk buffer never follows a symbolic link: a checkpoint that is one
// is corrupt (counted, the log read from its oldest segment), a temporary
// checkpoint placed as one while the log is open is counted and replaced
// without touching its target, and a segment that is one is not read.
func TestSymlinksNotFollowed(t *testing.T) {
	target := filepath.Join(t.TempDir(), "target")
	require.NoError(t, os.WriteFile(target, []byte("not the agent's"), 0o600))

	t.Run("checkpoint", func(t *testing.T) {
		cfg := testConfig(t)
		l := mustOpen(t, cfg)
		want := appendAll(t, l, newWorld(8, 10), 3)
		require.NoError(t, l.Close())
		cp := filepath.Join(cfg.Dir, checkpointName)
		require.NoError(t, os.Remove(cp))
		require.NoError(t, os.Symlink(target, cp))
		l = mustOpen(t, cfg)
		got, _ := readAll(t, l)
		require.Equal(t, want, got)
		st := l.Stats()
		require.Equal(t, uint64(1), st.Corrupt)
		require.ErrorContains(t, st.LastCorrupt, "checkpoint")
		require.ErrorContains(t, st.LastCorrupt, "is a symbolic link")
		require.NoError(t, l.Close())
	})
	t.Run("temporary checkpoint", func(t *testing.T) {
		cfg := testConfig(t)
		l := mustOpen(t, cfg)
		appendAll(t, l, newWorld(9, 10), 2)
		require.NoError(t, os.Symlink(target, filepath.Join(cfg.Dir, checkpointTmp)))
		_, _ = readAll(t, l) // acknowledges: writes the checkpoint
		require.NoError(t, l.Close())
		require.Equal(t, uint64(1), l.Stats().Corrupt)
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, "not the agent's", string(b), "the link's target is untouched")
		fi, err := os.Lstat(filepath.Join(cfg.Dir, checkpointName))
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "the checkpoint was written")
	})
	t.Run("open", func(t *testing.T) {
		dir := t.TempDir()
		link := filepath.Join(dir, "link")
		require.NoError(t, os.Symlink(target, link))
		for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR | os.O_CREATE | os.O_EXCL} {
			_, err := OSFS.OpenFile(link, flag, 0o600)
			require.ErrorIs(t, err, ErrSymlink, "flag %#x", flag)
			require.ErrorContains(t, err, link)
		}
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, "not the agent's", string(b))
	})
}

// A keyframe body that claims as many objects as it has bytes, and fails
// at its second (a repeated key), allocates for what it read, not for the
// claim.
func TestKeyframeCountNotTrusted(t *testing.T) {
	body := binary.AppendUvarint(nil, 1<<20)
	body = append(body, make([]byte, 1<<20)...)
	d := newDecoder()
	var err error
	n := allocated(func() { err = d.applyKey(body) })
	require.ErrorIs(t, err, errBadBody)
	require.Less(t, n, uint64(16<<20), "not 80 bytes per claimed object")
}
