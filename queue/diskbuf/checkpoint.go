package diskbuf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

const (
	checkpointName = "checkpoint"
	checkpointTmp  = "checkpoint.tmp"
	// checkpointLen is magic(4) + segment(8) + offset(8) + mark(8) +
	// CRC-32C(4).
	checkpointLen   = 32
	checkpointMagic = "KSPQ"
)

// position is a read position: the next record to read starts at off in
// segment seg.
type position struct {
	// seg is the segment number.
	seg uint64
	// off is the byte offset in that segment.
	off int64
	// mark, when more than off, is the end of the records from off that
	// were handed out and marked as in flight (Buffer.MarkInFlight): the
	// ones that may have reached a receiver before a stop. 0 for none.
	mark int64
}

// encodeCheckpoint returns the checkpoint file's bytes for p.
func encodeCheckpoint(p position) []byte {
	b := make([]byte, 0, checkpointLen)
	b = append(b, checkpointMagic...)
	b = binary.BigEndian.AppendUint64(b, p.seg)
	b = binary.BigEndian.AppendUint64(b, uint64(p.off))
	b = binary.BigEndian.AppendUint64(b, uint64(p.mark))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// errNoCheckpoint means the checkpoint file does not exist: a new buffer.
var errNoCheckpoint = errors.New("no checkpoint")

// readCheckpoint reads the checkpoint in dir. It returns errNoCheckpoint when
// there is none and a *CorruptError when it cannot be trusted.
func readCheckpoint(dir string) (position, error) {
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return position{}, errNoCheckpoint
	case err != nil:
		return position{}, fmt.Errorf("reading checkpoint: %w", err)
	}
	bad := func(reason string) (position, error) {
		return position{}, &CorruptError{File: checkpointName, Reason: reason}
	}
	if len(b) != checkpointLen {
		return bad(fmt.Sprintf("length %d, want %d", len(b), checkpointLen))
	}
	if string(b[:4]) != checkpointMagic {
		return bad("bad magic")
	}
	if crc32.Checksum(b[:checkpointLen-crcLen], castagnoli) != binary.BigEndian.Uint32(b[checkpointLen-crcLen:]) {
		return bad("CRC-32C mismatch")
	}
	p := position{
		seg:  binary.BigEndian.Uint64(b[4:]),
		off:  int64(binary.BigEndian.Uint64(b[12:])),
		mark: int64(binary.BigEndian.Uint64(b[20:])),
	}
	if p.off < 0 || p.mark < 0 {
		return bad("negative offset")
	}
	return p, nil
}

// writeCheckpoint replaces the checkpoint in dir atomically: a temp file
// renamed over the old one, so a crash leaves either the old or the new.
// With sync, the file and the directory are fsynced too.
func writeCheckpoint(dir string, p position, sync bool) error {
	tmp := filepath.Join(dir, checkpointTmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating checkpoint: %w", err)
	}
	_, err = f.Write(encodeCheckpoint(p))
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointName)); err != nil {
		return fmt.Errorf("renaming checkpoint: %w", err)
	}
	if sync {
		return syncDir(dir)
	}
	return nil
}
