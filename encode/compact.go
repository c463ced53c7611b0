package encode

import (
	"bytes"
	"hash/maphash"
)

// Compactor copies a rendered set out of its scratch space with the labels
// that several of its series carry stored once, at the end of its buffer,
// and referred to (refShared, refs.go): an object's identity labels
// (namespace, pod, uid), a container's name, a node's name, a resource and
// unit. With many pods this is most of the label bytes the series map keeps.
// Its scratch space is reused; a Compactor is not safe for concurrent use.
type Compactor struct {
	// Intern makes literal labels references to the interned table, as
	// the renderers write them: each family name (__name__), and every
	// other label the table holds. For sets read back from outside the
	// process (a disk buffer), where labels come literal; rendered sets
	// have theirs interned already.
	Intern bool

	// slots index elems by each label element's hash (maphash, with the
	// process's elemSeed: it only finds repeats within one set, so it need
	// not be stable): an open-addressing table, a power of two long and at
	// most half full (a Go map and xxhash cost too much on this path, which
	// runs for every label of every rendered object).
	slots []compactSlot
	// elems are the distinct label elements of the set being compacted.
	elems []compactElem
	// occ is, in walk order, the entry in elems of each literal element
	// long enough to share (-1 for one whose hash another holds).
	occ []int32
	// region is the shared labels, and out the compacted set, both
	// scratch space copied out exactly sized.
	region []byte
	out    SeriesSet
	// named is scratch space for a set whose literal labels are interned
	// (internLabels).
	named SeriesSet
}

// compactElem is one distinct label element of the set being compacted.
type compactElem struct {
	// off and n locate its first copy in the source set's buffer.
	off, n uint32
	// count is the number of series that carry it.
	count uint32
	// dist is its distance from the end of the compacted buffer, 0 when it
	// is not shared.
	dist uint32
	// h is its hash, and slot its place in the table.
	h    uint64
	slot uint32
}

// compactSlot is one place in the Compactor's table: a hash, and the index
// in elems of the element holding it, plus one (0: empty).
type compactSlot struct {
	h   uint64
	idx int32
}

// compactSlotsMin is the table's length to start with.
const compactSlotsMin = 256

// elemSeed seeds the Compactor's element hashes.
var elemSeed = maphash.MakeSeed()

// compactMin is the shortest label element worth a reference: a reference
// takes 2 or 3 bytes.
const compactMin = 6

// compactSlotsKeep is the table's length past which it is made anew rather
// than kept: one huge object would otherwise leave every small one after it
// a table it does not need.
const compactSlotsKeep = 8192

// Compact returns a copy of src, exactly sized as Clone's, whose repeated
// labels are shared. The series, their order, hashes, values, timestamps and
// exposition trailers are src's; only how the labels are stored changes. A
// set that already has a shared region, or nothing worth sharing, is cloned
// (with Intern, once its labels are interned).
func (c *Compactor) Compact(src *SeriesSet) SeriesSet {
	if src.Shared != 0 {
		return src.Clone()
	}
	if c.Intern {
		if named, ok := c.internLabels(src); ok {
			src = named
		}
	}
	if len(src.Refs) < 2 {
		return src.Clone()
	}
	c.resetSlots()
	c.elems, c.occ = c.elems[:0], c.occ[:0]
	table := internedElems()

	// Count the series that carry each label.
	for i := range src.Refs {
		base := src.Refs[i].Off
		b := src.Labels(i)
		for pos := 0; pos < len(b); {
			l, literal := nextElem(b[pos:], table)
			if l == 0 {
				return src.Clone() // not LabelsBuilder's bytes: leave them be
			}
			if literal && l >= compactMin { // a reference (interned) is kept as it is
				e := b[pos : pos+l]
				h := maphash.Bytes(elemSeed, e)
				slot, idx := c.find(h)
				switch {
				case idx < 0:
					idx = c.insert(slot, h, compactElem{off: base + uint32(pos), n: uint32(l), count: 1})
				case bytes.Equal(c.elemBytes(src, idx), e):
					c.elems[idx].count++
				default:
					idx = -1 // another label with the same hash: not shared
				}
				c.occ = append(c.occ, idx)
			}
			pos += l
		}
	}

	// Store once those whose references save bytes.
	c.region = c.region[:0]
	for i := range c.elems {
		// Stored once when references (at most 3 bytes each) save more
		// than the copy costs; dist is its end, for now.
		if e := &c.elems[i]; e.count >= 2 && e.count*(e.n-3) > e.n {
			c.region = append(c.region, c.elemBytes(src, int32(i))...)
			e.dist = uint32(len(c.region))
		}
	}
	if len(c.region) == 0 {
		return src.Clone()
	}
	for i := range c.elems {
		if e := &c.elems[i]; e.dist > 0 {
			// The distance of its start from the region's end.
			e.dist = uint32(len(c.region)) - e.dist + e.n
		}
	}

	// Write the series with references to them.
	out := &c.out
	out.Reset()
	k := 0
	for i, r := range src.Refs {
		b := src.Labels(i)
		off := len(out.Buf)
		for pos := 0; pos < len(b); {
			l, literal := nextElem(b[pos:], table) // parsed in the count above
			if literal && l >= compactMin {
				if idx := c.occ[k]; idx >= 0 && c.elems[idx].dist > 0 {
					out.Buf = appendRef(out.Buf, refShared, uint64(c.elems[idx].dist))
					k++
					pos += l
					continue
				}
				k++
			}
			out.Buf = append(out.Buf, b[pos:pos+l]...)
			pos += l
		}
		r.Off, r.Len = uint32(off), uint32(len(out.Buf)-off)
		out.Refs = append(out.Refs, r)
		out.Buf = append(out.Buf, src.Trailer(i)...)
	}
	out.Buf = append(out.Buf, c.region...)
	out.Shared = uint32(len(c.region))
	out.Timestamps = src.Timestamps
	set := out.Clone()
	out.Timestamps = nil
	return set
}

// internLabels returns src with its literal labels replaced by references
// to the interned table where internLiteral finds or adds them, built in
// c's scratch space; ok is false, and nothing built, for bytes that do
// not parse.
func (c *Compactor) internLabels(src *SeriesSet) (set *SeriesSet, ok bool) {
	out := &c.named
	out.Reset()
	for i, r := range src.Refs {
		b := src.Labels(i)
		off := len(out.Buf)
		for pos := 0; pos < len(b); {
			l, literal := nextElem(b[pos:], nil)
			if l == 0 {
				return nil, false // not LabelsBuilder's bytes: leave them be
			}
			if !literal { // a reference: kept as it is
				out.Buf = append(out.Buf, b[pos:pos+l]...)
			} else if ref, named := internLiteral(b[pos : pos+l]); named {
				out.Buf = appendRef(out.Buf, refInterned, uint64(ref))
			} else {
				out.Buf = append(out.Buf, b[pos:pos+l]...)
			}
			pos += l
		}
		r.Off, r.Len = uint32(off), uint32(len(out.Buf)-off)
		out.Refs = append(out.Refs, r)
		out.Buf = append(out.Buf, src.Trailer(i)...)
	}
	out.Timestamps = src.Timestamps
	return out, true
}

// resetSlots empties the table of the elements the last Compact put in it
// (or makes it anew), without walking all of it.
func (c *Compactor) resetSlots() {
	if len(c.slots) == 0 || len(c.slots) > compactSlotsKeep {
		c.slots = make([]compactSlot, compactSlotsMin)
		return
	}
	for _, e := range c.elems {
		c.slots[e.slot] = compactSlot{}
	}
}

// find returns the slot holding hash h and its element's index in elems, or
// the empty slot where h goes and -1.
func (c *Compactor) find(h uint64) (slot uint32, idx int32) {
	mask := uint64(len(c.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := c.slots[p]
		if s.idx == 0 {
			return uint32(p), -1
		}
		if s.h == h {
			return uint32(p), s.idx - 1
		}
	}
}

// insert adds e, whose hash h the table does not hold, at the empty slot
// find returned, and returns its index in elems. It doubles the table when
// it is half full.
func (c *Compactor) insert(slot uint32, h uint64, e compactElem) int32 {
	idx := int32(len(c.elems))
	e.h, e.slot = h, slot
	c.elems = append(c.elems, e)
	c.slots[slot] = compactSlot{h: h, idx: idx + 1}
	if 2*len(c.elems) >= len(c.slots) {
		c.slots = make([]compactSlot, 2*len(c.slots))
		for i := range c.elems {
			s, _ := c.find(c.elems[i].h)
			c.elems[i].slot = s
			c.slots[s] = compactSlot{h: c.elems[i].h, idx: int32(i) + 1}
		}
	}
	return idx
}

// elemBytes returns the bytes of entry idx in src's buffer.
func (c *Compactor) elemBytes(src *SeriesSet, idx int32) []byte {
	e := c.elems[idx]
	return src.Buf[e.off : e.off+e.n]
}
