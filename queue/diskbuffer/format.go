package diskbuffer

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

	// formatVersion is the first byte of every record. Records that
	// continue a frame (kindMore) came later without a new version: the
	// layout of a record is the same, and a frame written as one record
	// is byte for byte what the first format wrote, so that logs of
	// either are read by one path.
	formatVersion = 1
	// kindKey is a keyframe: every object in full.
	kindKey = 1
	// kindDelta is a delta against the frame before it in the segment.
	kindDelta = 2
	// kindMore is added to the kind of every record of a frame but its
	// last: the frame goes on in the next record.
	kindMore = 0x80

	// partBytes is the body size at which the encoder seals a record and
	// goes on with the frame in the next one (at the next object,
	// removal or staleness marker). It bounds the memory a frame costs to
	// write and to read back, whatever the number of series: a large
	// cluster's keyframe as one record would cost its body, its
	// compressed copy and a framed copy of that, several times its size.
	// It is small because the encoder keeps that scratch space between
	// frames: at edge size a larger one was a tenth of the heap.
	partBytes = 256 << 10
	// keepBytes bounds the scratch space the encoder and the reader keep
	// between records: one that grew past it (an object whose set alone
	// is larger, or a record of the first format) is dropped after use.
	// A keyframe's body, sized for a record and grown by the literal form
	// of shared labels, stays below it.
	keepBytes = 1 << 20

	// maxRecordLen bounds one record, and maxBodyLen its decompressed
	// body, so that a corrupt or crafted length cannot make the reader
	// allocate much: a record is read only when the segment holds all of
	// it, and its body's length, which the record claims, is checked
	// before it is allocated. Records of this format hold about partBytes
	// of body; a keyframe the first format wrote as one record (its whole
	// body) stays below both up to several times the bench's 10,000 pods.
	maxRecordLen = 256 << 20
	maxBodyLen   = 256 << 20
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
	// errCutFrame is a frame whose last record is missing: its records
	// end with the segment, as a crash in the middle of writing them
	// leaves it.
	errCutFrame = errors.New("frame cut off at end of segment")
)

// header is a record's uncompressed prefix: enough to count a frame
// without decoding it. Every record of a frame carries the frame's.
type header struct {
	// kind is kindKey or kindDelta.
	kind byte
	// more is set on every record of a frame but its last (kindMore).
	more bool
	// ts is the frame's timestamp in milliseconds.
	ts int64
	// samples is Frame.Samples() of the frame the record regenerates.
	samples int
}

func appendHeader(dst []byte, h header) []byte {
	kind := h.kind
	if h.more {
		kind |= kindMore
	}
	dst = append(dst, formatVersion, kind)
	dst = binary.AppendVarint(dst, h.ts)
	return binary.AppendUvarint(dst, uint64(h.samples))
}

// parseHeader parses a record header and returns it and its length.
func parseHeader(b []byte) (header, int, error) {
	if len(b) < 2 || b[0] != formatVersion {
		return header{}, 0, fmt.Errorf("%w: bad version", errBadBody)
	}
	h := header{kind: b[1] &^ kindMore, more: b[1]&kindMore != 0}
	if h.kind != kindKey && h.kind != kindDelta {
		return header{}, 0, fmt.Errorf("%w: bad kind", errBadBody)
	}
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
	if err != nil || dl > maxExpansion*len(comp)+64 || dl > maxBodyLen {
		return h, nil, fmt.Errorf("%w: bad compressed length", errBadBody)
	}
	body, err := snappy.Decode(make([]byte, dl), comp)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %w", errBadBody, err)
	}
	return h, body, nil
}

// frameInPlace frames the record buf[at:] as
// [length uvarint][CRC-32C of the record, big endian][record], the frame
// header written into the room before at (at least maxFrameHeader bytes),
// and returns the framed record: the record is not copied.
func frameInPlace(buf []byte, at int) []byte {
	rec := buf[at:]
	var hb [maxFrameHeader]byte
	h := binary.AppendUvarint(hb[:0], uint64(len(rec)))
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(rec, castagnoli))
	start := at - len(h)
	copy(buf[start:], h)
	return buf[start:]
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

// readFrame reads the record at off into buf (or a new slice if buf is
// too small) and returns it and the next record's offset. It allocates
// only after the length was checked against the bytes present.
func readFrame(r io.ReaderAt, off, size int64, buf []byte) ([]byte, int64, error) {
	body, n, want, err := frameAt(r, off, size)
	if err != nil {
		return nil, off, err
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	rec := buf[:n]
	if _, err := r.ReadAt(rec, body); err != nil && (!errors.Is(err, io.EOF) || n != 0) {
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
	return errors.Is(err, errTorn) || errors.Is(err, errCutFrame) || errors.Is(err, errBadCRC) || errors.Is(err, errBadLen) || errors.Is(err, errBadBody)
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
