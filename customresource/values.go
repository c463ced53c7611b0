package customresource

import (
	"errors"
	"regexp"
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
	fromPath pathLabels
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
			var ev eachValue
			if single != "" && key == single {
				f, err := g.parse(elem, g.nilIsZero)
				if err != nil {
					g.errs++
					continue
				}
				ev = eachValue{labels: g.newLabels(), value: f}
			} else {
				// An element whose value does not parse is skipped
				// silently here, as kube-state-metrics does.
				var ok bool
				if ev, ok, _ = g.value(elem); !ok {
					continue
				}
			}
			if key != "" && g.labelFromKey != "" {
				ev.labels.set(g.labelFromKey, key)
			}
			addPathLabels(elem, g.fromPath, &ev.labels)
			// And from the map itself, which wins.
			addPathLabels(v, g.fromPath, &ev.labels)
			out = append(out, ev)
		}
	case []any:
		for _, elem := range it {
			ev, ok, err := g.value(elem)
			if err != nil {
				g.errs++
			}
			if !ok {
				continue
			}
			addPathLabels(elem, g.fromPath, &ev.labels)
			out = append(out, ev)
		}
	default:
		ev, ok, err := g.value(v)
		if err != nil {
			g.errs++
		}
		if !ok {
			break
		}
		addPathLabels(v, g.fromPath, &ev.labels)
		out = append(out, ev)
	}
	return out
}

// nested walks the maps under v down to len(nestedKeys) levels, each
// level's key a label, and renders every value found at the last level as
// an element (labelsFromPath relative to it).
func (g *gauge) nested(v any, depth int, keys []string, out []eachValue) []eachValue {
	if depth == len(g.nestedKeys) {
		ev, ok, err := g.value(v)
		if err != nil {
			g.errs++
		}
		if !ok {
			return out
		}
		for i, k := range keys {
			ev.labels.set(g.nestedKeys[i], k)
		}
		addPathLabels(v, g.fromPath, &ev.labels)
		return append(out, ev)
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

// newLabels returns an empty label set with room for the labels a series
// of this gauge gets, so that it grows once at most.
func (g *gauge) newLabels() labelSet {
	n := len(g.fromPath.plain) + 2*len(g.fromPath.stars) + len(g.nestedKeys)
	if g.labelFromKey != "" {
		n++
	}
	if n == 0 {
		return nil
	}
	return make(labelSet, 0, n)
}

// value reads one element's number: nil and no error when valueFrom does
// not resolve (0 with nilIsZero), an error when the element itself is nil
// or the value is not a number.
func (g *gauge) value(elem any) (ev eachValue, ok bool, err error) {
	got := g.valueFrom.get(elem)
	if got == nil {
		if g.nilIsZero {
			return eachValue{labels: g.newLabels()}, true, nil
		}
		if elem == nil {
			return eachValue{}, false, errNilPath
		}
		return eachValue{}, false, nil
	}
	if g.constant != nil {
		return eachValue{labels: g.newLabels(), value: *g.constant}, true, nil
	}
	f, err := g.parse(got, g.nilIsZero)
	if err != nil {
		return eachValue{}, false, err
	}
	return eachValue{labels: g.newLabels(), value: f}, true, nil
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
			var labels labelSet
			if key != "" && c.labelFromKey != "" {
				labels.set(c.labelFromKey, key)
			}
			addPathLabels(elem, c.fromPath, &labels)
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
	var labels labelSet
	addPathLabels(v, c.fromPath, &labels)
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
		ev := eachValue{labels: append(make(labelSet, 0, 1+len(s.fromPath.plain)+2*len(s.fromPath.stars)), label{s.labelName, entry})}
		if state == entry {
			ev.value = 1
		}
		addPathLabels(v, s.fromPath, &ev.labels)
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
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return invalidLabelChar.ReplaceAllString(s, "_")
		}
	}
	return s
}
