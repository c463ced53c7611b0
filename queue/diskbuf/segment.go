package diskbuf

import (
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

// castagnoli is the CRC-32C table (hardware accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	segmentExt = ".seg"
	crcLen     = 4
	// maxHeaderLen is the longest frame header: a 10-byte uvarint and the CRC.
	maxHeaderLen = binary.MaxVarintLen64 + crcLen
)

// segment is one segment file as the Buffer tracks it.
type segment struct {
	// num orders segments; the file is segmentName(num).
	num uint64
	// size is the file's length in bytes.
	size int64
}

// segmentName is the file name of segment num: 00000001.seg.
func segmentName(num uint64) string { return fmt.Sprintf("%08d%s", num, segmentExt) }

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, segmentExt)
	if !ok || s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && n > 0
}

// listSegments returns the segments in dir, oldest first.
func listSegments(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing buffer directory: %w", err)
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
	slices.SortFunc(segs, func(a, b segment) int {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	})
	return segs, nil
}

// frameLen is the length on disk of a record of n bytes.
func frameLen(n int) int64 {
	var tmp [binary.MaxVarintLen64]byte
	return int64(binary.PutUvarint(tmp[:], uint64(n)) + crcLen + n)
}

// appendFrame appends the framed record to dst.
func appendFrame(dst, rec []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(rec)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(rec, castagnoli))
	return append(dst, rec...)
}

// errTorn, errBadLen and errBadCRC are the reasons readFrame gives for bad
// data; Peek turns them into a *CorruptError.
var (
	errTorn   = errors.New("torn record at end of segment")
	errBadCRC = errors.New("CRC-32C mismatch")
	errBadLen = errors.New("invalid record length")
)

// readFrame reads the record that starts at off in a segment of size bytes.
// It returns the payload and the offset of the next record, io.EOF when off
// is the end of the segment, or errTorn, errBadLen or errBadCRC for data it
// cannot trust. It allocates only after the length has been checked against
// the bytes actually present, so garbage cannot make it allocate much.
func readFrame(r io.ReaderAt, off, size int64) ([]byte, int64, error) {
	if off >= size {
		return nil, off, io.EOF
	}
	var hdr [maxHeaderLen]byte
	h := hdr[:min(int64(len(hdr)), size-off)]
	if _, err := r.ReadAt(h, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, off, fmt.Errorf("reading record header: %w", err)
	}
	n, k := binary.Uvarint(h)
	switch {
	case k == 0: // the varint runs past the end of the file
		return nil, off, errTorn
	case k < 0: // more than 64 bits
		return nil, off, errBadLen
	}
	body := off + int64(k) + crcLen
	if body > size || n > uint64(size-body) {
		return nil, off, errTorn
	}
	want := binary.BigEndian.Uint32(h[k:])
	rec := make([]byte, n)
	if _, err := r.ReadAt(rec, body); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		if errors.Is(err, io.EOF) {
			return nil, off, errTorn // shrank under us
		}
		return nil, off, fmt.Errorf("reading record: %w", err)
	}
	if crc32.Checksum(rec, castagnoli) != want {
		return nil, off, errBadCRC
	}
	return rec, body + int64(n), nil
}

// visitFrames counts the readable records from off to the end of a
// segment, stopping at the first bad one, as a reader would, and calls fn
// (if not nil) with each.
func visitFrames(path string, off, size int64, fn func(rec []byte)) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("opening segment to count records: %w", err)
	}
	defer f.Close()
	n := 0
	for {
		rec, next, err := readFrame(f, off, size)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, errTorn) || errors.Is(err, errBadCRC) || errors.Is(err, errBadLen) {
				return n, nil
			}
			return n, err
		}
		if fn != nil {
			fn(rec)
		}
		n++
		off = next
	}
}

// syncDir fsyncs a directory so that created, renamed and removed entries
// survive a machine crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory to sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory: %w", err)
	}
	return nil
}

// segmentPath is the path of segment num in dir.
func segmentPath(dir string, num uint64) string { return filepath.Join(dir, segmentName(num)) }
