package diskbuffer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kube-state-push/kube-state-push/encode"
)

// errDuplicateKey is returned by Append for a frame that holds one key
// twice.
var errDuplicateKey = errors.New("diskbuffer: duplicate object key in frame")

// written is the writer's memory of one object of the last frame written.
type written struct {
	// set is the object's set in that frame.
	set *encode.SeriesSet
	// gen is the encoder's gen of the last frame that held the object.
	gen uint32
}

// change is an object whose set differs from the last frame's.
type change struct {
	key      uint64
	old, new *encode.SeriesSet
}

// removal is an object of the last frame that the new frame lacks.
type removal struct {
	key uint64
	old *encode.SeriesSet
}

// encoder turns frames into records, each frame a keyframe or a delta
// against the frame encoded before it. A frame goes out as records of
// bounded size, each written as soon as it is sealed, so that encoding one
// holds a bounded body and its compressed copy however many series it
// has. Its scratch space is reused, so that a steady state delta
// allocates nothing per series: an unchanged object costs a map lookup
// and a pointer comparison.
type encoder struct {
	// last is every object of the last frame encoded, by key.
	last map[uint64]written
	// gen numbers the frames encoded, to find the objects a frame lacks.
	gen uint32
	// partBytes is the body size at which a record is sealed: partBytes
	// the constant, smaller in tests to make frames of many records.
	partBytes int
	// body is the body of the record being built; out the sealed record
	// (frame header, record header, snappy block). Both are reused while
	// they stay within keepBytes.
	body, out []byte
	// w takes the frame's records.
	w recordWriter
	// hdr is the header of the frame being encoded, or of the last one.
	hdr header
	// sections is the number of counted runs in a body of the frame's
	// kind (keyframe: objects, staleness markers; delta: removals,
	// changes, staleness markers), sec the one being written.
	sections, sec int
	// countAt is where the count of section sec goes: the run starts
	// countRoom bytes later, moved back once the count is known. count is
	// the run's items so far, items the record's in all its sections.
	countAt, count, items int
	// changed and removed are the delta's objects, reused.
	changed []change
	removed []removal
	// oldIdx maps an old set's label hashes to series indexes while an
	// object is diffed; reused.
	oldIdx map[uint64]int
	// staleIdx maps the label hashes of the touched objects' old series
	// to touched<<32|index, so that a staleness marker for one of them is
	// stored as a reference; reused.
	staleIdx map[uint64]uint64
	// touched are the old sets staleIdx points into: removed, then changed.
	touched []*encode.SeriesSet
	// lit is scratch space for a set's literal form (encode.SeriesSet.Literal),
	// and labels for one series': references to labels the process keeps
	// once are never written, since they mean nothing to another process.
	lit    encode.SeriesSet
	labels []byte
}

// countRoom is the room left for a section's count before its items: the
// longest uvarint.
const countRoom = binary.MaxVarintLen64

// zeros fills countRoom.
var zeros [countRoom]byte

func newEncoder() *encoder {
	return &encoder{
		last:      make(map[uint64]written),
		partBytes: partBytes,
		oldIdx:    make(map[uint64]int),
		staleIdx:  make(map[uint64]uint64),
	}
}

// keyframe writes f in full to w and makes it the frame the next delta is
// taken against. After an error the encoder's memory is unusable: the
// next frame must be a keyframe.
func (e *encoder) keyframe(f *encode.Frame, w recordWriter) error {
	clear(e.last)
	e.gen++
	e.begin(kindKey, 2, f, w)
	for _, o := range f.Objects {
		if _, dup := e.last[o.Key]; dup {
			return errDuplicateKey
		}
		e.last[o.Key] = written{set: o.Set, gen: e.gen}
		if err := e.item(); err != nil {
			return err
		}
		e.body = binary.LittleEndian.AppendUint64(e.body, o.Key)
		e.body = e.appendSet(e.body, o.Set)
	}
	e.section()
	for _, s := range f.Stale {
		if err := e.item(); err != nil {
			return err
		}
		e.body = e.appendLiteralStale(e.body, s)
	}
	return e.end()
}

// delta writes f to w as its difference from the frame encoded before it,
// which becomes f. After an error the encoder's memory is unusable: the
// next frame must be a keyframe.
func (e *encoder) delta(f *encode.Frame, w recordWriter) error {
	e.gen++
	e.changed, e.removed = e.changed[:0], e.removed[:0]
	for _, o := range f.Objects {
		prev, ok := e.last[o.Key]
		switch {
		case ok && prev.gen == e.gen:
			return errDuplicateKey
		case ok && prev.set == o.Set:
			prev.gen = e.gen
			e.last[o.Key] = prev
			continue
		}
		e.changed = append(e.changed, change{key: o.Key, old: prev.set, new: o.Set})
		e.last[o.Key] = written{set: o.Set, gen: e.gen}
	}
	for k, prev := range e.last {
		if prev.gen != e.gen {
			e.removed = append(e.removed, removal{key: k, old: prev.set})
			delete(e.last, k)
		}
	}

	// The old sets a staleness marker may point into, numbered across
	// the frame's records in the order written.
	clear(e.staleIdx)
	clear(e.touched)
	e.touched = e.touched[:0]
	e.begin(kindDelta, 3, f, w)
	for _, r := range e.removed {
		if err := e.item(); err != nil {
			return err
		}
		e.body = binary.LittleEndian.AppendUint64(e.body, r.key)
		e.touch(r.old)
	}
	e.section()
	for _, c := range e.changed {
		if err := e.item(); err != nil {
			return err
		}
		b := binary.LittleEndian.AppendUint64(e.body, c.key)
		switch {
		case c.old == nil:
			b = append(b, opSet)
			b = e.appendSet(b, c.new)
			e.touch(nil) // keeps touched in step with the reader's
		case sameSeries(c.old, c.new) && c.new.Timestamps != nil:
			b = append(b, opValuesTimed)
			b = appendValueChanges(b, c.old, c.new)
			b = appendTimestamps(b, c.new.Timestamps)
			e.touch(c.old)
		case sameSeries(c.old, c.new):
			b = append(b, opValues)
			b = appendValueChanges(b, c.old, c.new)
			e.touch(c.old)
		default:
			b = e.appendDiff(b, c.old, c.new)
			e.touch(c.old)
		}
		e.body = b
	}
	e.section()
	for _, s := range f.Stale {
		if err := e.item(); err != nil {
			return err
		}
		if v, ok := e.staleIdx[s.Hash]; ok {
			t, i := int(v>>32), int(uint32(v))
			if old := e.touched[t]; encode.EqualLabels(old.Labels(i), s.Labels) {
				e.body = binary.AppendUvarint(e.body, uint64(t)+1)
				e.body = binary.AppendUvarint(e.body, uint64(i))
				continue
			}
		}
		e.body = e.appendLiteralStale(e.body, s)
	}
	return e.end()
}

// touch adds an old set (nil for a new object) to the sets that
// staleness markers may refer to.
func (e *encoder) touch(old *encode.SeriesSet) {
	t := len(e.touched)
	e.touched = append(e.touched, old)
	if old == nil {
		return
	}
	for i, r := range old.Refs {
		e.staleIdx[r.Hash] = uint64(t)<<32 | uint64(i)
	}
}

// sameSeries reports whether two sets hold the same series in the same
// order: only their values may differ.
func sameSeries(a, b *encode.SeriesSet) bool {
	if len(a.Refs) != len(b.Refs) || !bytes.Equal(a.Buf, b.Buf) || (a.Timestamps == nil) != (b.Timestamps == nil) {
		return false
	}
	for i := range a.Refs {
		x, y := &a.Refs[i], &b.Refs[i]
		if x.Off != y.Off || x.Len != y.Len || x.Hash != y.Hash {
			return false
		}
	}
	return true
}

// appendValueChanges appends the values of cur that differ from old's
// (bit for bit), as index gaps and values.
func appendValueChanges(b []byte, old, cur *encode.SeriesSet) []byte {
	n := 0
	for i := range cur.Refs {
		if math.Float64bits(cur.Refs[i].Value) != math.Float64bits(old.Refs[i].Value) {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	prev := -1
	for i := range cur.Refs {
		if v := cur.Refs[i].Value; math.Float64bits(v) != math.Float64bits(old.Refs[i].Value) {
			b = binary.AppendUvarint(b, uint64(i-prev-1))
			b = appendValue(b, v)
			prev = i
		}
	}
	return b
}

// Flags of a full set.
const (
	// setOffsets: each series stores its offset (the labels are not back
	// to back in render order).
	setOffsets = 1
	// setTimestamps: the series carry their own sample times
	// (SeriesSet.Timestamps), which follow the series (appendTimestamps).
	setTimestamps = 2
)

// appendSet appends a whole set: series count, flags, Buf, and per series
// its length (shifted left, low bit set when the hash follows because
// encode.HashLabels does not give it), its offset if setOffsets, and its value.
func (e *encoder) appendSet(b []byte, s *encode.SeriesSet) []byte {
	s = s.Literal(&e.lit)
	flags := byte(0)
	var off uint32
	for _, r := range s.Refs {
		if r.Off != off {
			flags |= setOffsets
			break
		}
		off += r.Len
	}
	if off != uint32(len(s.Buf)) {
		flags |= setOffsets
	}
	if s.Timestamps != nil {
		flags |= setTimestamps
	}
	b = binary.AppendUvarint(b, uint64(len(s.Refs)))
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(s.Buf)))
	b = append(b, s.Buf...)
	for i, r := range s.Refs {
		h, ok := encode.HashLabels(s.Labels(i))
		explicit := !ok || h != r.Hash
		b = binary.AppendUvarint(b, uint64(r.Len)<<1|b2u(explicit))
		if flags&setOffsets != 0 {
			b = binary.AppendUvarint(b, uint64(r.Off))
		}
		if explicit {
			b = binary.LittleEndian.AppendUint64(b, r.Hash)
		}
		b = appendValue(b, r.Value)
	}
	if flags&setTimestamps != 0 {
		b = appendTimestamps(b, s.Timestamps)
	}
	return b
}

// appendTimestamps appends the series' own sample times, each as the
// zigzag difference from the one before (from 0 for the first): series
// read together share or nearly share one.
func appendTimestamps(b []byte, ts []int64) []byte {
	prev := int64(0)
	for _, t := range ts {
		b = binary.AppendUvarint(b, zigzag(t-prev))
		prev = t
	}
	return b
}

// appendDiff appends cur as opDiff against old, or as opSet when they
// share no series. Each series is a uvarint: 0 new labels whose hash is
// derived, 1 new labels and their hash, k >= 2 old series k-2; then new
// labels as length and bytes (and hash), then the value.
func (e *encoder) appendDiff(b []byte, old, cur *encode.SeriesSet) []byte {
	if cur.Timestamps != nil {
		// A set of series with their own times changes whole at each
		// read: not worth a diff.
		b = append(b, opSet)
		return e.appendSet(b, cur)
	}
	clear(e.oldIdx)
	for i, r := range old.Refs {
		e.oldIdx[r.Hash] = i
	}
	shared := false
	for i, r := range cur.Refs {
		if j, ok := e.oldIdx[r.Hash]; ok && encode.EqualLabels(old.Labels(j), cur.Labels(i)) {
			shared = true
			break
		}
	}
	if !shared {
		b = append(b, opSet)
		return e.appendSet(b, cur)
	}
	b = append(b, opDiff)
	b = binary.AppendUvarint(b, uint64(len(cur.Refs)))
	for i, r := range cur.Refs {
		ls := cur.Labels(i)
		if j, ok := e.oldIdx[r.Hash]; ok && encode.EqualLabels(old.Labels(j), ls) {
			b = binary.AppendUvarint(b, uint64(j)+2)
		} else {
			h, ok := encode.HashLabels(ls)
			explicit := !ok || h != r.Hash
			e.labels = encode.AppendLabels(e.labels[:0], ls)
			ls = e.labels
			b = binary.AppendUvarint(b, b2u(explicit))
			b = binary.AppendUvarint(b, uint64(len(ls)))
			b = append(b, ls...)
			if explicit {
				b = binary.LittleEndian.AppendUint64(b, r.Hash)
			}
		}
		b = appendValue(b, r.Value)
	}
	return b
}

// appendLiteralStale appends a staleness marker in full: 0, hash, length,
// labels.
func (e *encoder) appendLiteralStale(b []byte, s encode.Stale) []byte {
	e.labels = encode.AppendLabels(e.labels[:0], s.Labels)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, s.Hash)
	b = binary.AppendUvarint(b, uint64(len(e.labels)))
	return append(b, e.labels...)
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// checkFrame rejects a frame the log cannot store.
func checkFrame(f *encode.Frame) error {
	for _, o := range f.Objects {
		if o.Set == nil {
			return fmt.Errorf("diskbuffer: object %#x has no series set", o.Key)
		}
	}
	return nil
}
