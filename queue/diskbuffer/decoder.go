package diskbuffer

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kube-state-push/kube-state-push/encode"
)

// decoder is the reader's state: every object of the last frame read,
// from which the next delta regenerates a whole frame. Sets it builds are
// never modified afterwards, so frames handed out stay valid while the
// state moves on. A frame taken from the writer (adopt) becomes the state
// as it is, its sets shared with the writer's. A frame of several records
// is applied record by record, so that reading it holds one record's
// bytes at a time beside the state.
type decoder struct {
	// objs are the objects of the last frame, in an order of the
	// decoder's own, or the writer's after adopt (a frame's object order
	// carries no meaning).
	objs []encode.Object
	// pos maps a key to its index in objs, once indexed.
	pos map[uint64]int
	// stalePos is set when pos does not index objs: after adopt, until
	// a delta needs it.
	stalePos bool
	// valid is set when objs are a whole frame's: not until a keyframe
	// was decoded, nor while a frame's records are, nor after an error.
	// A delta cannot be applied to an unknown state.
	valid bool
	// open is set from a frame's first record until its last: objs hold
	// the frame so far. cur is the header of its first record, which the
	// others must repeat.
	open bool
	cur  header
	// stale are the frame's staleness markers so far; reused.
	stale []encode.Stale
	// touched are the old sets of this delta's removed and changed
	// objects, in the order of its records, which staleness markers
	// refer to; reused.
	touched []*encode.SeriesSet
	// compact stores each decoded set's repeated labels once, as the
	// series map does (encode.Compactor), and the labels the renderers
	// intern (family names, enumeration values) as references to the
	// interned table again: the log holds sets expanded, and a restart
	// that read a keyframe's as they are would hold about four times the
	// series map's bytes until the next keyframe.
	compact encode.Compactor
}

func newDecoder() *decoder {
	return &decoder{pos: make(map[uint64]int), compact: encode.Compactor{Intern: true}}
}

// reset forgets the state: the next record must start a keyframe. The old
// sets go, and the record bodies they alias.
func (d *decoder) reset() {
	clear(d.objs)
	d.objs = d.objs[:0]
	clear(d.touched)
	d.touched = d.touched[:0]
	clear(d.stale)
	d.stale = d.stale[:0]
	clear(d.pos)
	d.stalePos = false
	d.valid, d.open = false, false
}

// adopt makes objs, the objects of the frame at the read position as the
// writer was given them, the state, as if the frame had been decoded; their sets are shared, not copied. It returns the old
// state's slice, emptied, for the writer to reuse. The index of objs is
// built when a delta needs it: while the reader keeps up, never.
func (d *decoder) adopt(objs []encode.Object) []encode.Object {
	old := d.objs
	clear(old)
	clear(d.touched)
	d.objs, d.touched = objs, d.touched[:0]
	d.stalePos, d.valid, d.open = true, true, false
	return old[:0]
}

// index rebuilds pos after adopt.
func (d *decoder) index() {
	if !d.stalePos {
		return
	}
	clear(d.pos)
	for i, o := range d.objs {
		d.pos[o.Key] = i
	}
	d.stalePos = false
}

// apply decodes a record's body onto the state. When the record is its
// frame's last and f is not nil, it fills f with the frame the record
// completes (f's slices are reused). body must not be modified
// afterwards: stale labels and sets alias it. On error the state is reset.
func (d *decoder) apply(h header, body []byte, f *encode.Frame) error {
	err := d.begin(h)
	if err == nil {
		if h.kind == kindKey {
			err = d.applyKey(body)
		} else {
			err = d.applyDelta(body)
		}
	}
	if err == nil && !h.more {
		d.open, d.valid = false, true
		if f != nil {
			f.Timestamp = h.ts
			f.Objects = append(f.Objects[:0], d.objs...)
			f.Stale = append(f.Stale[:0], d.stale...)
			if n := f.Samples(); n != h.samples {
				err = fmt.Errorf("%w: %d samples, header says %d", errBadBody, n, h.samples)
			}
		}
		// The markers' labels alias record bodies: f holds them now.
		clear(d.stale)
		d.stale = d.stale[:0]
	}
	if err != nil {
		d.reset()
		if f != nil {
			f.Reset()
		}
		return err
	}
	return nil
}

// begin checks that a record follows the one before: the next of the
// open frame's, or the first of a frame, and starts that frame.
func (d *decoder) begin(h header) error {
	switch {
	case d.open:
		if h.kind != d.cur.kind || h.ts != d.cur.ts || h.samples != d.cur.samples {
			return fmt.Errorf("%w: record of another frame before the last of a frame's", errBadBody)
		}
		return nil
	case h.kind == kindKey:
		d.reset()
	case !d.valid:
		return fmt.Errorf("%w: delta without a keyframe", errBadBody)
	default:
		d.index()
		clear(d.touched)
		d.touched = d.touched[:0]
	}
	d.open, d.valid, d.cur = true, false, h
	return nil
}

// setChunk is how many series sets a keyframe allocates at a time.
const setChunk = 1024

// applyKey adds a keyframe record's objects and staleness markers.
func (d *decoder) applyKey(body []byte) error {
	r := reader{b: body}
	n := r.count()
	// The sets are allocated in chunks as they are read, not all n at
	// once: a count is checked only against the bytes left, and a crafted
	// one would otherwise cost 80 bytes for each byte of body.
	var chunk []encode.SeriesSet
	for i := range n {
		key := r.u64()
		if r.err != nil {
			return r.err
		}
		if _, dup := d.pos[key]; dup {
			return fmt.Errorf("%w: key %#x twice", errBadBody, key)
		}
		if len(chunk) == 0 {
			chunk = make([]encode.SeriesSet, min(n-i, setChunk))
		}
		set := &chunk[0]
		chunk = chunk[1:]
		r.set(set)
		if r.err != nil {
			return r.err
		}
		*set = d.compact.Compact(set)
		d.pos[key] = len(d.objs)
		d.objs = append(d.objs, encode.Object{Key: key, Set: set})
	}
	return d.readStale(&r)
}

// applyDelta applies a delta record's removals and changes and adds its
// staleness markers.
func (d *decoder) applyDelta(body []byte) error {
	r := reader{b: body}
	n := r.count()
	for range n {
		key := r.u64()
		if r.err != nil {
			return r.err
		}
		i, ok := d.pos[key]
		if !ok {
			return fmt.Errorf("%w: removed key %#x is not there", errBadBody, key)
		}
		d.touched = append(d.touched, d.objs[i].Set)
		last := len(d.objs) - 1
		d.objs[i] = d.objs[last]
		d.pos[d.objs[i].Key] = i
		d.objs[last] = encode.Object{}
		d.objs = d.objs[:last]
		delete(d.pos, key)
	}
	n = r.count()
	for range n {
		key := r.u64()
		op := r.byte()
		if r.err != nil {
			return r.err
		}
		i, ok := d.pos[key]
		var old *encode.SeriesSet
		if ok {
			old = d.objs[i].Set
		}
		set := new(encode.SeriesSet)
		switch {
		case op == opSet:
			r.set(set)
		case op == opValues && old != nil && old.Timestamps == nil:
			r.values(set, old)
		case op == opValuesTimed && old != nil && old.Timestamps != nil:
			r.values(set, old)
			set.Timestamps = r.timestamps(len(set.Refs))
		case op == opDiff && old != nil:
			r.diff(set, old)
		default:
			return fmt.Errorf("%w: change %d to key %#x (present: %t)", errBadBody, op, key, ok)
		}
		if r.err != nil {
			return r.err
		}
		if op == opSet || op == opDiff {
			*set = d.compact.Compact(set)
		}
		d.touched = append(d.touched, old)
		if ok {
			d.objs[i].Set = set
		} else {
			d.pos[key] = len(d.objs)
			d.objs = append(d.objs, encode.Object{Key: key, Set: set})
		}
	}
	return d.readStale(&r)
}

// readStale decodes a record's staleness markers into d.stale and checks
// that the body ends there.
func (d *decoder) readStale(r *reader) error {
	n := r.count()
	for range n {
		var s encode.Stale
		switch t := r.uvarint(); {
		case r.err != nil:
		case t == 0:
			s.Hash = r.u64()
			s.Labels = r.bytes(r.count())
			if r.err == nil && !encode.IsLiteral(s.Labels) {
				r.fail("stale labels do not parse")
			}
		case t-1 < uint64(len(d.touched)) && d.touched[t-1] != nil:
			old := d.touched[t-1]
			if i := r.uvarint(); i < uint64(len(old.Refs)) {
				s = encode.Stale{Hash: old.Refs[i].Hash, Labels: old.Labels(int(i))}
			} else {
				r.fail("stale series index out of range")
			}
		default:
			r.fail("stale reference out of range")
		}
		if r.err != nil {
			return r.err
		}
		d.stale = append(d.stale, s)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	return r.err
}

// reader parses a record body; the first error sticks and every later
// read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errBadBody, what)
	}
	r.b = nil
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of items that each take at least one byte, so that
// it cannot exceed what is left.
func (r *reader) count() int {
	v := r.uvarint()
	if v > uint64(len(r.b)) {
		r.fail("count past the end")
		return 0
	}
	return int(v)
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail("short")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.fail("short")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// bytes returns the next n bytes, aliasing the body, capacity clipped.
func (r *reader) bytes(n int) []byte {
	if n > len(r.b) {
		r.fail("short")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) value() float64 {
	u := r.uvarint()
	switch {
	case r.err != nil:
		return 0
	case u&1 == 0:
		return float64(unzigzag(u >> 1))
	case u == 1:
		return math.Float64frombits(r.u64())
	}
	r.fail("bad value tag")
	return 0
}

// set reads a whole set (see appendSet) into s, its Buf aliasing the body.
func (r *reader) set(s *encode.SeriesSet) {
	n := r.count()
	flags := r.byte()
	if flags&^(setOffsets|setTimestamps) != 0 {
		r.fail("unknown set flags")
	}
	buf := r.bytes(r.count())
	if r.err != nil {
		return
	}
	refs := make([]encode.Ref, n)
	var off uint64
	for i := range refs {
		lt := r.uvarint()
		l := lt >> 1
		if flags&setOffsets != 0 {
			off = r.uvarint()
		}
		if r.err != nil {
			return
		}
		if off > uint64(len(buf)) || l > uint64(len(buf))-off {
			r.fail("series labels out of range")
			return
		}
		ref := &refs[i]
		ref.Off, ref.Len = uint32(off), uint32(l)
		if !encode.IsLiteral(buf[off : off+l]) {
			// The writer expands references (encode.AppendLabels).
			r.fail("labels do not parse")
			return
		}
		if lt&1 != 0 {
			ref.Hash = r.u64()
		} else if h, ok := encode.HashLabels(buf[off : off+l]); ok {
			ref.Hash = h
		} else {
			r.fail("labels do not parse")
			return
		}
		ref.Value = r.value()
		off += l
	}
	if flags&setOffsets == 0 && off != uint64(len(buf)) {
		r.fail("labels do not fill the buffer")
	}
	s.Buf, s.Refs = buf, refs
	if flags&setTimestamps != 0 {
		s.Timestamps = r.timestamps(n)
	}
}

// timestamps reads n series' own sample times (appendTimestamps).
func (r *reader) timestamps(n int) []int64 {
	ts := make([]int64, n)
	prev := int64(0)
	for i := range ts {
		prev += unzigzag(r.uvarint())
		ts[i] = prev
	}
	if r.err != nil {
		return nil
	}
	return ts
}

// values reads opValues: old's series with some values changed.
func (r *reader) values(s *encode.SeriesSet, old *encode.SeriesSet) {
	refs := append([]encode.Ref(nil), old.Refs...)
	n := r.count()
	i := -1
	for range n {
		gap := r.uvarint()
		if r.err != nil {
			return
		}
		if gap >= uint64(len(refs)-i-1) {
			r.fail("value index out of range")
			return
		}
		i += int(gap) + 1
		refs[i].Value = r.value()
	}
	s.Buf, s.Shared, s.Refs = old.Buf, old.Shared, refs
}

// diff reads opDiff (see encoder.appendDiff) against old.
func (r *reader) diff(s *encode.SeriesSet, old *encode.SeriesSet) {
	n := r.count()
	if r.err != nil {
		return
	}
	refs := make([]encode.Ref, n)
	// Usually about as long as the old set's: one series relabelled.
	buf := make([]byte, 0, len(old.Buf)+64)
	for i := range refs {
		t := r.uvarint()
		var ls []byte
		var hash uint64
		switch {
		case r.err != nil:
			return
		case t >= 2:
			if t-2 >= uint64(len(old.Refs)) {
				r.fail("diff index out of range")
				return
			}
			ls, hash = old.Labels(int(t-2)), old.Refs[t-2].Hash
		case t == 1:
			ls = r.bytes(r.count())
			hash = r.u64()
			if r.err == nil && !encode.IsLiteral(ls) {
				r.fail("labels do not parse")
			}
		default:
			ls = r.bytes(r.count())
			h, ok := encode.HashLabels(ls)
			if r.err == nil && (!ok || !encode.IsLiteral(ls)) {
				r.fail("labels do not parse")
			}
			hash = h
		}
		if r.err != nil {
			return
		}
		// An old series may be the appender's own, whose references point
		// into its set: copied expanded.
		off := len(buf)
		if buf = encode.AppendLabels(buf, ls); uint64(len(buf)) > math.MaxUint32 {
			r.fail("set too large")
			return
		}
		refs[i] = encode.Ref{Off: uint32(off), Len: uint32(len(buf) - off), Hash: hash, Value: r.value()}
	}
	s.Buf, s.Refs = buf[:len(buf):len(buf)], refs
}
