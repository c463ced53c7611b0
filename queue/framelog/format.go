package framelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/golang/snappy"
)

// castagnoli is the CRC-32C table (hardware accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	crcLen = 4
	// maxFrameHeader is the longest frame header: a 10-byte uvarint length
	// and the CRC.
	maxFrameHeader = binary.MaxVarintLen64 + crcLen
	// maxRecordHeader is the longest record header: version, kind, a
	// varint timestamp and a uvarint sample count.
	maxRecordHeader = 2 + 2*binary.MaxVarintLen64

	// formatVersion is the first byte of every record.
	formatVersion = 1
	// kindKey is a keyframe: every object in full.
	kindKey = 1
	// kindDelta is a delta against the frame before it in the segment.
	kindDelta = 2

	// maxRecordLen bounds one record, so that a corrupt length cannot make
	// the reader allocate much (a keyframe of 615k samples is ~15 MB).
	maxRecordLen = 1 << 30
	// maxExpansion bounds the decoded length claimed by a snappy block
	// against its compressed length; snappy cannot expand more than ~22x.
	maxExpansion = 32
)

// Change operations in a delta, one per changed object.
const (
	// opValues: same series and labels, some values changed.
	opValues = 1
	// opSet: the object's whole set (a new object, or nothing shared).
	opSet = 2
	// opDiff: the set as a list of series, each either a copy of one of
	// the previous set's (by index) or new labels.
	opDiff = 3
	// opValuesTimed: opValues for a set whose series carry their own
	// sample times (kubelet series), followed by every series' time
	// (appendTimestamps).
	opValuesTimed = 4
)

// Corruption reasons; the reader wraps them in a *CorruptError.
var (
	errTorn    = errors.New("torn record at end of segment")
	errBadCRC  = errors.New("CRC-32C mismatch")
	errBadLen  = errors.New("invalid record length")
	errBadBody = errors.New("malformed record")
)

// header is a record's uncompressed prefix: enough to count a record
// without decoding it.
type header struct {
	// kind is kindKey or kindDelta.
	kind byte
	// ts is the frame's timestamp in milliseconds.
	ts int64
	// samples is Frame.Samples() of the frame the record regenerates.
	samples int
}

func appendHeader(dst []byte, h header) []byte {
	dst = append(dst, formatVersion, h.kind)
	dst = binary.AppendVarint(dst, h.ts)
	return binary.AppendUvarint(dst, uint64(h.samples))
}

// parseHeader parses a record header and returns it and its length.
func parseHeader(b []byte) (header, int, error) {
	if len(b) < 2 || b[0] != formatVersion || b[1] != kindKey && b[1] != kindDelta {
		return header{}, 0, fmt.Errorf("%w: bad version or kind", errBadBody)
	}
	h := header{kind: b[1]}
	ts, n := binary.Varint(b[2:])
	if n <= 0 {
		return header{}, 0, fmt.Errorf("%w: bad timestamp", errBadBody)
	}
	s, m := binary.Uvarint(b[2+n:])
	if m <= 0 || s > math.MaxInt32 {
		return header{}, 0, fmt.Errorf("%w: bad sample count", errBadBody)
	}
	h.ts, h.samples = ts, int(s)
	return h, 2 + n + m, nil
}

// splitRecord checks a record's header and decompresses its body into a
// new slice (never reused: regenerated frames alias it).
func splitRecord(rec []byte) (header, []byte, error) {
	h, n, err := parseHeader(rec)
	if err != nil {
		return h, nil, err
	}
	comp := rec[n:]
	dl, err := snappy.DecodedLen(comp)
	if err != nil || dl > maxExpansion*len(comp)+64 {
		return h, nil, fmt.Errorf("%w: bad compressed length", errBadBody)
	}
	body, err := snappy.Decode(make([]byte, dl), comp)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %w", errBadBody, err)
	}
	return h, body, nil
}

// frameLen is the length on disk of a record of n bytes.
func frameLen(n int) int64 {
	var tmp [binary.MaxVarintLen64]byte
	return int64(binary.PutUvarint(tmp[:], uint64(n)) + crcLen + n)
}

// appendFrame appends rec framed as
// [length uvarint][CRC-32C of rec, big endian][rec].
func appendFrame(dst, rec []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(rec)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(rec, castagnoli))
	return append(dst, rec...)
}

// frameAt reads the frame header at off in a segment of size bytes and
// returns the payload's offset and length. It returns io.EOF at the end,
// errTorn or errBadLen for a header it cannot trust.
func frameAt(r io.ReaderAt, off, size int64) (body int64, n int64, crc uint32, err error) {
	if off >= size {
		return 0, 0, 0, io.EOF
	}
	var hdr [maxFrameHeader]byte
	h := hdr[:min(int64(len(hdr)), size-off)]
	if _, err := r.ReadAt(h, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, 0, fmt.Errorf("reading record header: %w", err)
	}
	u, k := binary.Uvarint(h)
	switch {
	case k == 0:
		return 0, 0, 0, errTorn
	case k < 0 || u > maxRecordLen:
		return 0, 0, 0, errBadLen
	}
	body = off + int64(k) + crcLen
	if body > size || int64(u) > size-body {
		return 0, 0, 0, errTorn
	}
	return body, int64(u), binary.BigEndian.Uint32(h[k:]), nil
}

// readFrame reads the record at off and returns it and the next record's
// offset. It allocates only after the length was checked against the
// bytes present.
func readFrame(r io.ReaderAt, off, size int64) ([]byte, int64, error) {
	body, n, want, err := frameAt(r, off, size)
	if err != nil {
		return nil, off, err
	}
	rec := make([]byte, n)
	if _, err := r.ReadAt(rec, body); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		if errors.Is(err, io.EOF) {
			return nil, off, errTorn
		}
		return nil, off, fmt.Errorf("reading record: %w", err)
	}
	if crc32.Checksum(rec, castagnoli) != want {
		return nil, off, errBadCRC
	}
	return rec, body + n, nil
}

// isCorrupt reports whether err is about bad data rather than I/O.
func isCorrupt(err error) bool {
	return errors.Is(err, errTorn) || errors.Is(err, errBadCRC) || errors.Is(err, errBadLen) || errors.Is(err, errBadBody)
}

// appendValue appends v: integers below 2^52 as a zigzag uvarint shifted
// left by one (0 and 1 take a byte), anything else as 1 and the 8 bytes of
// its bits, so that every value, NaN payloads and -0 included, round-trips
// exactly.
func appendValue(b []byte, v float64) []byte {
	if i := int64(v); float64(i) == v && i > -(1<<52) && i < 1<<52 && (i != 0 || !math.Signbit(v)) {
		return binary.AppendUvarint(b, zigzag(i)<<1)
	}
	b = append(b, 1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func zigzag(i int64) uint64 { return uint64(i<<1) ^ uint64(i>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
