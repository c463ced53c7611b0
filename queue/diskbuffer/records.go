package diskbuffer

import (
	"encoding/binary"

	"github.com/kube-state-push/kube-state-push/encode"
)

// A frame's records: the encoder fills a body of at most partBytes,
// section by section, and seals it (compressed, behind its header and
// framing) into the recordWriter as soon as it is full, so that a frame of
// any size is written with a bounded buffer.

// recordWriter takes the records of a frame as the encoder seals them.
type recordWriter interface {
	// writeRecord stores the next record of the frame being encoded,
	// framed (length, CRC, record). rec is valid only during the call.
	writeRecord(rec []byte) error
}

// begin starts the records of f, of a kind whose bodies have the given
// number of sections, to be written to w. For a keyframe the body is
// sized for a whole record first: grown by append, a body of partBytes
// would leave about five times that in garbage.
func (e *encoder) begin(kind byte, sections int, f *encode.Frame, w recordWriter) {
	e.hdr = header{kind: kind, ts: f.Timestamp, samples: f.Samples()}
	e.w, e.sections = w, sections
	if kind == kindKey {
		// Labels, and a few bytes per series: about what the body takes.
		want, limit := 0, e.partBytes+e.partBytes/4
		for _, o := range f.Objects {
			if want += len(o.Set.Buf) + 4*len(o.Set.Refs) + 16; want >= limit {
				want = limit
				break
			}
		}
		if cap(e.body) < want {
			e.body = make([]byte, 0, want)
		}
	}
	e.record(0)
}

// record starts a record's body whose sections before sec are empty (they
// ended in the records before) and opens section sec.
func (e *encoder) record(sec int) {
	b := e.body[:0]
	for range sec {
		b = append(b, 0)
	}
	e.sec, e.items = sec, 0
	e.body = e.open(b)
}

// open leaves room for a section's count at the end of b.
func (e *encoder) open(b []byte) []byte {
	e.countAt, e.count = len(b), 0
	return append(b, zeros[:]...)
}

// item counts an item that the caller is about to append to the current
// section; first, if the body is full, it writes the record out and
// starts the next one with that section open. A record holds at least
// one item, so that one larger than partBytes still goes out.
func (e *encoder) item() error {
	if len(e.body) >= e.partBytes && e.items > 0 {
		sec := e.sec
		e.closeSection()
		for range e.sections - 1 - sec {
			e.body = append(e.body, 0) // the sections to come, empty here
		}
		if err := e.seal(true); err != nil {
			return err
		}
		e.record(sec)
	}
	e.count++
	e.items++
	return nil
}

// section ends the current section and opens the next.
func (e *encoder) section() {
	e.closeSection()
	e.sec++
	e.body = e.open(e.body)
}

// end writes the frame's last record.
func (e *encoder) end() error {
	e.closeSection()
	return e.seal(false)
}

// closeSection writes the current section's count and moves its items
// back against it.
func (e *encoder) closeSection() {
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(tmp[:], uint64(e.count))
	copy(e.body[e.countAt:], tmp[:n])
	e.body = append(e.body[:e.countAt+n], e.body[e.countAt+countRoom:]...)
}

// seal compresses the body behind the record header and the frame header,
// in place in out, and writes the record. Scratch space past keepBytes
// goes.
func (e *encoder) seal(more bool) error {
	h := e.hdr
	h.more = more
	var hb [maxRecordHeader]byte
	rh := appendHeader(hb[:0], h)
	const room = maxFrameHeader + maxRecordHeader
	// The compressed body follows the room for the headers; out grows to
	// about the compressed length, not the body's (AppendCompressed).
	out := encode.AppendCompressed(append(e.out[:0], make([]byte, room)...), e.body)
	e.out = out
	at := room - len(rh)
	copy(out[at:], rh)
	err := e.w.writeRecord(frameInPlace(out, at))
	if cap(e.body) > keepBytes {
		e.body = nil
	}
	if cap(e.out) > keepBytes {
		e.out = nil
	}
	return err
}
