package watch

import (
	"sync"

	"github.com/kube-state-push/kube-state-push/encode"
)

// layouts holds, by family name, the text layout (encode.Layout) of the
// family's first series: its label names in the order the generator
// emitted them, empty values included. It is learnt while rendering, so a
// family costs nothing here until it renders, and no layout is written by
// hand beside the generator it would have to match. A stored layout never
// changes: a series emitted with other names (kube-state-metrics adds some
// labels only to some series of a family) carries its own order in an
// exposition trailer instead.
var layouts sync.Map

// LayoutOf returns the text layout of a family, or nil before the family
// rendered a series.
func LayoutOf(name string) *encode.Layout {
	v, ok := layouts.Load(name)
	if !ok {
		return nil
	}
	return v.(*encode.Layout)
}

// layoutFor returns the family's layout, making it from an emission (the
// first n entries of ident, as name, value pairs, then the pairs of kv) if
// the family has none yet.
func layoutFor(name string, ident []string, n int, kv []string, generated bool) *encode.Layout {
	if l := LayoutOf(name); l != nil {
		return l
	}
	keys := make([]string, 0, n/2+len(kv)/2)
	for i := 0; i+1 < n; i += 2 {
		keys = append(keys, ident[i])
	}
	for i := 0; i+1 < len(kv); i += 2 {
		keys = append(keys, kv[i])
	}
	v, _ := layouts.LoadOrStore(name, encode.NewLayout(keys, generated))
	return v.(*encode.Layout)
}

// fits reports whether an emission's label names are exactly l.Keys, in
// order, and it has generated labels just when l does.
func fits(l *encode.Layout, ident []string, n int, kv []string, generated bool) bool {
	if l.Generated != generated || len(l.Keys) != n/2+len(kv)/2 {
		return false
	}
	j := 0
	for i := 0; i+1 < n; i += 2 {
		if l.Keys[j] != ident[i] {
			return false
		}
		j++
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if l.Keys[j] != kv[i] {
			return false
		}
		j++
	}
	return true
}
