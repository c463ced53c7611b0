package customresource

import (
	"slices"
	"sort"
	"strings"
)

// labelSet is a series' labels before they are emitted, sorted by name and
// unique: what kube-state-metrics keeps in a map and sorts when it writes
// (eachValue.ToMetric), kept sorted as it is built, so that a series costs
// one small slice instead of a map and its keys sorted again.
type labelSet []label

// label is one name and value of a labelSet.
type label struct{ name, value string }

// set adds a label or replaces its value, as a map assignment does.
func (l *labelSet) set(name, value string) {
	i, found := slices.BinarySearchFunc(*l, name, func(x label, n string) int { return strings.Compare(x.name, n) })
	if found {
		(*l)[i].value = value
		return
	}
	*l = slices.Insert(*l, i, label{name, value})
}

// labelSetOf returns the labels of a map, sorted.
func labelSetOf(m map[string]string) labelSet {
	out := make(labelSet, 0, len(m))
	for k, v := range m {
		out = append(out, label{k, v})
	}
	slices.SortFunc(out, func(a, b label) int { return strings.Compare(a.name, b.name) })
	return out
}

// compareLabelSets orders label sets as kube-state-metrics sorts a
// family's series (compareLabels in its registry_factory.go): pairwise by
// name, then value, then by size.
func compareLabelSets(a, b labelSet) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].name, b[i].name); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].value, b[i].value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// pathLabels are compiled labelsFromPath: the "*" copies of maps in name
// order, then the named labels (their names already sanitized), which win.
type pathLabels struct {
	stars, plain []namedPath
}

// namedPath is one labelsFromPath entry: for a copy, the name as written
// (its part before a trailing "*" prefixes the keys).
type namedPath struct {
	name string
	p    path
}

// pathLabelsOf compiles a labelsFromPath map whose paths are compiled.
func pathLabelsOf(m map[string]path) pathLabels {
	var pl pathLabels
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if isStar(k) {
			pl.stars = append(pl.stars, namedPath{k, m[k]})
			continue
		}
		pl.plain = append(pl.plain, namedPath{sanitizeLabelName(k), m[k]})
	}
	return pl
}

// isStar reports whether a labelsFromPath name copies a whole map.
func isStar(k string) bool { return strings.HasPrefix(k, "*") || strings.HasSuffix(k, "*") }

// addPathLabels adds the labels of paths resolved in obj to out: first the
// "*" copies of maps (a trailing "*" makes the part before it the prefix of
// each name), then the named labels, which win; a path that does not
// resolve adds nothing.
func addPathLabels(obj any, pl pathLabels, out *labelSet) {
	for _, s := range pl.stars {
		m, ok := s.p.get(obj).(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			if strings.HasSuffix(s.name, "*") {
				k = s.name[:len(s.name)-1] + k
			}
			out.set(sanitizeLabelName(k), labelValue(v))
		}
	}
	for _, n := range pl.plain {
		if v := n.p.get(obj); v != nil {
			out.set(n.name, labelValue(v))
		}
	}
}
