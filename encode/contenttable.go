package encode

import (
	"bytes"
	"hash/maphash"
	"math/bits"
)

// contentTable maps byte strings kept in an arena (V2Encoder.arena) to
// values, for one request at a time: the 2.0 encoder's symbols. A key is
// hashed once for a lookup and the insert that may follow it (a Go map
// hashes it for each), and slots hold the key's offset and length in the
// arena rather than a string, so the table holds no pointers for the
// collector to scan.
//
// It is an open-addressing table with linear probing whose slots are
// stamped with the request's number, like labelTable's: a new request
// starts with an empty table without clearing it.
type contentTable[V any] struct {
	slots []contentSlot[V]
	// used counts the slots of the current request; the table doubles
	// before it is half full.
	used  int
	shift uint8
	seed  maphash.Seed
}

type contentSlot[V any] struct {
	// off and n locate the key in the arena.
	off, n uint32
	// hash is the top half of the key's hash: its top bits are the
	// slot's place, all of it a quick check before the bytes.
	hash uint32
	gen  uint32
	val  V
}

// minContentSlots is the size of a new table.
const minContentSlots = 64

// reset starts a new request: it frees every slot, as a new request
// number does.
func (t *contentTable[V]) reset() {
	t.used = 0
	if len(t.slots) == 0 {
		t.seed = maphash.MakeSeed()
		t.resize(minContentSlots)
	}
}

// clear empties every slot, for when the request numbers wrap.
func (t *contentTable[V]) clear() {
	clear(t.slots)
	t.used = 0
}

// hash returns key's hash for find and insert.
func (t *contentTable[V]) hash(key []byte) uint32 {
	return uint32(maphash.Bytes(t.seed, key) >> 32)
}

// find looks key, whose hash is h, up among the slots of request gen. It
// returns its value and true, or the slot where it goes and false.
func (t *contentTable[V]) find(arena, key []byte, h, gen uint32) (val V, slot int, ok bool) {
	mask := len(t.slots) - 1
	for i := int(h >> t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != gen {
			return val, i, false
		}
		if s.hash == h && int(s.n) == len(key) && bytes.Equal(arena[s.off:s.off+s.n], key) {
			return s.val, i, true
		}
	}
}

// insert puts the key at arena[off:off+n], whose hash is h, and its value
// in slot, which find just returned for it.
func (t *contentTable[V]) insert(arena []byte, slot int, off, n, h uint32, val V, gen uint32) {
	if 2*(t.used+1) > len(t.slots) {
		t.grow(gen)
		_, slot, _ = t.find(arena, arena[off:off+n], h, gen)
	}
	t.slots[slot] = contentSlot[V]{off: off, n: n, hash: h, gen: gen, val: val}
	t.used++
}

// grow doubles the table, keeping the slots of request gen.
func (t *contentTable[V]) grow(gen uint32) {
	old := t.slots
	t.resize(2 * len(old))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.gen != gen {
			continue
		}
		i := int(s.hash >> t.shift)
		for t.slots[i].gen == gen {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// resize replaces the slots with n free ones; n is a power of two.
func (t *contentTable[V]) resize(n int) {
	t.slots = make([]contentSlot[V], n)
	t.shift = uint8(32 - bits.TrailingZeros(uint(n)))
}
