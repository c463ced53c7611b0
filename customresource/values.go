package customresource

import (
	"errors"
	"regexp"
	"slices"
	"strings"
)

// The metric types, as kube-state-metrics finds their series
// (registry_factory.go: compiledGauge, compiledInfo, compiledStateSet).
// Their quirks are kept on purpose, each noted where it is.

// errNilPath is kube-state-metrics' error for a gauge whose path did not
// resolve.
var errNilPath = errors.New("got nil while resolving path")

// common is what every metric type has: its path and its labels.
type common struct {
	at       path
	fromPath map[string]path
	// errs counts the values kube-state-metrics would log as errors (not
	// a number, not a string for a state set, a path that resolves to
	// nothing without nilIsZero) since takeErrors; renderers do not share
	// a compiled family, so it needs no lock.
	errs int
}

func (c *common) path() path { return c.at }

// takeErrors returns errs and resets it.
func (c *common) takeErrors() int {
	n := c.errs
	c.errs = 0
	return n
}

// gauge renders numbers.
type gauge struct {
	common
	valueFrom    path
	labelFromKey string
	nilIsZero    bool
	// constant (extension) replaces the value read at valueFrom.
	constant *float64
	// parse turns a value into a number: toFloat64, or durationSeconds.
	parse func(any, bool) (float64, error)
	// nestedKeys (extension) are the labels of the keys of nested maps.
	nestedKeys []string
}

func (g *gauge) values(v any) []eachValue {
	if len(g.nestedKeys) > 0 {
		return g.nested(v, 0, nil, nil)
	}
	var out []eachValue
	switch it := v.(type) {
	case map[string]any:
		// valueFrom of one part names a key of the map: that key's value,
		// unlabelled (kube-state-metrics compares the path's string form).
		single := ""
		if len(g.valueFrom) == 1 && !strings.Contains(g.valueFrom[0].part, ",") {
			single = g.valueFrom[0].part
		}
		for key, elem := range it {
			var ev *eachValue
			if single != "" && key == single {
				f, err := g.parse(elem, g.nilIsZero)
				if err != nil {
					g.errs++
					continue
				}
				ev = &eachValue{labels: map[string]string{}, value: f}
			} else {
				// An element whose value does not parse is skipped
				// silently here, as kube-state-metrics does.
				if ev, _ = g.value(elem); ev == nil {
					continue
				}
			}
			if key != "" && g.labelFromKey != "" {
				ev.labels[g.labelFromKey] = key
			}
			addPathLabels(elem, g.fromPath, ev.labels)
			// And from the map itself, which wins.
			addPathLabels(v, g.fromPath, ev.labels)
			out = append(out, *ev)
		}
	case []any:
		for _, elem := range it {
			ev, err := g.value(elem)
			if err != nil {
				g.errs++
			}
			if err != nil || ev == nil {
				continue
			}
			addPathLabels(elem, g.fromPath, ev.labels)
			out = append(out, *ev)
		}
	default:
		ev, err := g.value(v)
		if err != nil {
			g.errs++
		}
		if err != nil || ev == nil {
			break
		}
		addPathLabels(v, g.fromPath, ev.labels)
		out = append(out, *ev)
	}
	return out
}

// nested walks the maps under v down to len(nestedKeys) levels, each
// level's key a label, and renders every value found at the last level as
// an element (labelsFromPath relative to it).
func (g *gauge) nested(v any, depth int, keys []string, out []eachValue) []eachValue {
	if depth == len(g.nestedKeys) {
		ev, err := g.value(v)
		if err != nil {
			g.errs++
		}
		if err != nil || ev == nil {
			return out
		}
		for i, k := range keys {
			ev.labels[g.nestedKeys[i]] = k
		}
		addPathLabels(v, g.fromPath, ev.labels)
		return append(out, *ev)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return out
	}
	for k, elem := range m {
		out = g.nested(elem, depth+1, append(keys[:depth:depth], k), out)
	}
	return out
}

// value reads one element's number: nil and no error when valueFrom does
// not resolve (0 with nilIsZero), an error when the element itself is nil
// or the value is not a number.
func (g *gauge) value(elem any) (*eachValue, error) {
	got := g.valueFrom.get(elem)
	if got == nil {
		if g.nilIsZero {
			return &eachValue{labels: map[string]string{}}, nil
		}
		if elem == nil {
			return nil, errNilPath
		}
		return nil, nil
	}
	if g.constant != nil {
		return &eachValue{labels: map[string]string{}, value: *g.constant}, nil
	}
	f, err := g.parse(got, g.nilIsZero)
	if err != nil {
		return nil, err
	}
	return &eachValue{labels: map[string]string{}, value: f}, nil
}

// info renders series of value 1 whose labels come from the object.
type info struct {
	common
	labelFromKey string
}

func (c *info) values(v any) []eachValue {
	switch it := v.(type) {
	case []any:
		var out []eachValue
		for _, elem := range it {
			out = append(out, c.one(elem)...)
		}
		return out
	case map[string]any:
		self := c.one(v)
		var out []eachValue
		// One series per key: labelFromKey, and the labels found under
		// the key's value.
		for key, elem := range it {
			labels := map[string]string{}
			if key != "" && c.labelFromKey != "" {
				labels[c.labelFromKey] = key
			}
			addPathLabels(elem, c.fromPath, labels)
			if len(labels) > 0 {
				out = append(out, eachValue{labels: labels, value: 1})
			}
		}
		return append(out, self...)
	default:
		return c.one(v)
	}
}

// one is the series of one element: only if it has labels from its paths.
func (c *info) one(v any) []eachValue {
	if v == nil {
		return nil
	}
	labels := map[string]string{}
	addPathLabels(v, c.fromPath, labels)
	if len(labels) == 0 {
		return nil
	}
	return []eachValue{{labels: labels, value: 1}}
}

// stateSet renders one series per state.
type stateSet struct {
	common
	valueFrom path
	list      []string
	labelName string
}

func (s *stateSet) values(v any) []eachValue {
	if l, ok := v.([]any); ok {
		var out []eachValue
		for _, elem := range l {
			out = append(out, s.one(elem)...)
		}
		return out
	}
	return s.one(v)
}

func (s *stateSet) one(v any) []eachValue {
	got := s.valueFrom.get(v)
	if got == nil {
		return nil // not set yet: no series, no error
	}
	state, ok := got.(string)
	if !ok {
		s.errs++ // kube-state-metrics: "expected value for path to be string"
		return nil
	}
	out := make([]eachValue, 0, len(s.list))
	for _, entry := range s.list {
		ev := eachValue{labels: map[string]string{s.labelName: entry}}
		if state == entry {
			ev.value = 1
		}
		addPathLabels(v, s.fromPath, ev.labels)
		out = append(out, ev)
	}
	return out
}

var invalidLabelChar = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// sanitizeLabelName replaces what a label name may not hold by "_"
// (kube-state-metrics' store.SanitizeLabelName).
func sanitizeLabelName(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return invalidLabelChar.ReplaceAllString(s, "_")
		}
	}
	return s
}

// isStar reports whether a labelsFromPath name copies a whole map.
func isStar(k string) bool { return strings.HasPrefix(k, "*") || strings.HasSuffix(k, "*") }

// addPathLabels adds the labels of paths resolved in obj to out: first the
// "*" copies of maps, in name order (a trailing "*" makes the part before
// it the prefix of each name), then the named labels, which win; a path
// that does not resolve adds nothing.
func addPathLabels(obj any, paths map[string]path, out map[string]string) {
	if len(paths) == 0 {
		return
	}
	var stars []string
	for k := range paths {
		if isStar(k) {
			stars = append(stars, k)
		}
	}
	slices.Sort(stars)
	for _, star := range stars {
		m, ok := paths[star].get(obj).(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			if strings.HasSuffix(star, "*") {
				k = star[:len(star)-1] + k
			}
			out[sanitizeLabelName(k)] = labelValue(v)
		}
	}
	for k, p := range paths {
		if isStar(k) {
			continue
		}
		if v := p.get(obj); v != nil {
			out[sanitizeLabelName(k)] = labelValue(v)
		}
	}
}

// compareLabels orders label sets as kube-state-metrics sorts a family's
// series: pairwise by sorted key, then value, then by size.
func compareLabels(a, b map[string]string) int {
	ak := sortedKeys(a)
	bk := sortedKeys(b)
	for i := range min(len(ak), len(bk)) {
		if c := strings.Compare(ak[i], bk[i]); c != 0 {
			return c
		}
		if c := strings.Compare(a[ak[i]], b[bk[i]]); c != 0 {
			return c
		}
	}
	return len(ak) - len(bk)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
