package diskbuffer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	checkpointName = "checkpoint"
	checkpointTmp  = "checkpoint.tmp"
	// checkpointLen is magic(4) + 4 x 8 bytes + CRC-32C(4).
	checkpointLen   = 40
	checkpointMagic = "KSPF"
	segmentExt      = ".seg"
)

// pos is a place in the log: the record starting at off in segment seg
// (for the reader's and the checkpoint's positions, a frame's first).
type pos struct {
	seg uint64
	off int64
}

// before reports whether p comes before q.
func (p pos) before(q pos) bool { return p.seg < q.seg || p.seg == q.seg && p.off < q.off }

// checkpoint is what the log saves of its reader.
type checkpoint struct {
	// acked is the position after the last acknowledged frame: a reopened
	// log replays its segment up to there and hands out what follows.
	acked pos
	// handed is the position after the last frame handed out; the frames
	// between acked and handed were in flight.
	handed pos
}

func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, 0, checkpointLen)
	b = append(b, checkpointMagic...)
	b = binary.BigEndian.AppendUint64(b, c.acked.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(c.acked.off))
	b = binary.BigEndian.AppendUint64(b, c.handed.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(c.handed.off))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// errNoCheckpoint means there is no checkpoint file: a new log.
var errNoCheckpoint = errors.New("no checkpoint")

// readCheckpoint returns errNoCheckpoint when there is none and a
// *CorruptError when it cannot be trusted.
func readCheckpoint(fs FS, dir string) (checkpoint, error) {
	f, err := fs.OpenFile(filepath.Join(dir, checkpointName), os.O_RDONLY, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return checkpoint{}, errNoCheckpoint
	case errors.Is(err, ErrSymlink):
		return checkpoint{}, &CorruptError{File: checkpointName, Reason: ErrSymlink.Error()}
	case err != nil:
		return checkpoint{}, fmt.Errorf("opening checkpoint: %w", err)
	}
	defer f.Close()
	b := make([]byte, checkpointLen+1)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return checkpoint{}, fmt.Errorf("reading checkpoint: %w", err)
	}
	bad := func(reason string) (checkpoint, error) {
		return checkpoint{}, &CorruptError{File: checkpointName, Reason: reason}
	}
	b = b[:n]
	switch {
	case n != checkpointLen:
		return bad(fmt.Sprintf("length %d, want %d", n, checkpointLen))
	case string(b[:4]) != checkpointMagic:
		return bad("bad magic")
	case crc32.Checksum(b[:checkpointLen-crcLen], castagnoli) != binary.BigEndian.Uint32(b[checkpointLen-crcLen:]):
		return bad("CRC-32C mismatch")
	}
	c := checkpoint{
		acked:  pos{seg: binary.BigEndian.Uint64(b[4:]), off: int64(binary.BigEndian.Uint64(b[12:]))},
		handed: pos{seg: binary.BigEndian.Uint64(b[20:]), off: int64(binary.BigEndian.Uint64(b[28:]))},
	}
	if c.acked.off < 0 || c.handed.off < 0 {
		return bad("negative offset")
	}
	return c, nil
}

// writeCheckpoint replaces the checkpoint atomically (temp file and
// rename), fsyncing file and directory when sync is set.
func writeCheckpoint(fs FS, dir string, c checkpoint, sync bool) error {
	tmp := filepath.Join(dir, checkpointTmp)
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if errors.Is(err, ErrSymlink) {
		return &CorruptError{File: checkpointTmp, Reason: ErrSymlink.Error()}
	}
	if err != nil {
		return fmt.Errorf("creating checkpoint: %w", err)
	}
	_, err = f.WriteAt(encodeCheckpoint(c), 0)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := fs.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return fmt.Errorf("renaming checkpoint: %w", err)
	}
	if sync {
		return fs.SyncDir(dir)
	}
	return nil
}

// segmentName is the file name of segment num: 00000001.seg.
func segmentName(num uint64) string { return fmt.Sprintf("%08d%s", num, segmentExt) }

func parseSegmentName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, segmentExt)
	if !ok || s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && n > 0
}

// listSegments returns the numbers and sizes of the segments in dir,
// oldest first.
func listSegments(fs FS, dir string) ([]segment, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing log directory: %w", err)
	}
	var segs []segment
	for _, e := range ents {
		num, ok := parseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("reading segment size: %w", err)
		}
		segs = append(segs, segment{num: num, size: fi.Size()})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.num, b.num) })
	return segs, nil
}
