package encode

import "math/bits"

// labelTable maps the addresses of label elements to their refs in one
// request. A label an object's series share is stored once, in the shared
// region of the object's set (refs.go), so its address names it among the
// labels of a request: all of them are alive while the request is encoded,
// and a set never changes. Looking an address up costs a multiplication
// and a compare, where looking the label's bytes up in a map costs hashing
// and comparing them.
//
// It is an open-addressing table with linear probing. Each slot is stamped
// with the number of the request that filled it: slots of other requests
// are free, so a new request starts with an empty table without clearing
// it, and an address met again in a later request (the memory may hold
// another set by then) is never mistaken for one of this request.
type labelTable struct {
	slots []labelSlot
	// used counts the slots of the current request; the table doubles
	// before it is half full.
	used  int
	shift uint8
}

type labelSlot struct {
	addr   uintptr
	enc    uint64
	metric uint32
	gen    uint32
}

// minLabelSlots is the size of a new table.
const minLabelSlots = 64

// reset starts a new request: it frees every slot, as Reset's new request
// number does.
func (t *labelTable) reset() {
	t.used = 0
	if len(t.slots) == 0 {
		t.resize(minLabelSlots)
	}
}

// clear empties every slot, for when the request numbers wrap.
func (t *labelTable) clear() {
	clear(t.slots)
	t.used = 0
}

// find looks addr up among the slots of request gen. It returns its refs
// and true, or the slot where it goes and false.
func (t *labelTable) find(addr uintptr, gen uint32) (refs labelRefs, slot int, ok bool) {
	mask := len(t.slots) - 1
	for i := int(uint64(addr) * 0x9e3779b97f4a7c15 >> t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != gen {
			return labelRefs{}, i, false
		}
		if s.addr == addr {
			return labelRefs{enc: s.enc, metric: s.metric}, i, true
		}
	}
}

// insert puts addr and its refs in slot, which find just returned for it.
func (t *labelTable) insert(slot int, addr uintptr, refs labelRefs, gen uint32) {
	if 2*(t.used+1) > len(t.slots) {
		t.grow(gen)
		_, slot, _ = t.find(addr, gen)
	}
	t.slots[slot] = labelSlot{addr: addr, enc: refs.enc, metric: refs.metric, gen: gen}
	t.used++
}

// grow doubles the table, keeping the slots of request gen.
func (t *labelTable) grow(gen uint32) {
	old := t.slots
	t.resize(2 * len(old))
	for _, s := range old {
		if s.gen != gen {
			continue
		}
		_, slot, _ := t.find(s.addr, gen)
		t.slots[slot] = s
	}
}

// resize replaces the slots with n free ones; n is a power of two.
func (t *labelTable) resize(n int) {
	t.slots = make([]labelSlot, n)
	t.shift = uint8(64 - bits.TrailingZeros(uint(n)))
}
