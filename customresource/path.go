package customresource

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A path walks an unstructured object (maps, lists and JSON scalars) as
// kube-state-metrics' valuePath does (pkg/customresourcestate/
// registry_factory.go, compilePath): each part is a map key, a list index
// (negative counts from the end), "[key=value]" (the first map in a list
// whose key equals value, compared as a string, a number or a boolean),
// or "key=value" (the map's value at key if it is the string value, else
// the map's value at the whole part).

// step is one part of a path.
type step struct {
	// part is the part as written, for messages.
	part string
	// list is set for "[key=value]"; key and value are its halves.
	list       bool
	key, value string
	// num and isNum are value parsed as a number (toFloat64), bool and
	// isBool as a boolean, for "[key=value]".
	num    float64
	isNum  bool
	bool   bool
	isBool bool
	// index and isIndex are part as a list index.
	index   int
	isIndex bool
	// eqKey and eqValue are the halves of "key=value", when part has one
	// '='.
	eqKey, eqValue string
	hasEq          bool
}

// path is a compiled path; the zero path resolves to the object itself.
type path []step

// compilePath compiles the parts of a path; the error is
// kube-state-metrics' own.
func compilePath(parts []string) (path, error) {
	var p path
	for _, part := range parts {
		s := step{part: part}
		if strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]") {
			k, v, ok := strings.Cut(part[1:len(part)-1], "=")
			if !ok {
				return nil, fmt.Errorf("invalid list lookup: %s", part)
			}
			s.list, s.key, s.value = true, k, v
			if n, err := toFloat64(v, false); err == nil {
				s.num, s.isNum = n, true
			}
			if b, err := strconv.ParseBool(v); err == nil {
				s.bool, s.isBool = b, true
			}
		} else {
			if i, err := strconv.Atoi(part); err == nil {
				s.index, s.isIndex = i, true
			}
			if kv := strings.Split(part, "="); len(kv) == 2 {
				s.eqKey, s.eqValue, s.hasEq = kv[0], kv[1], true
			}
		}
		p = append(p, s)
	}
	return p, nil
}

// get resolves the path in obj; nil if it does not resolve.
func (p path) get(obj any) any {
	for i := range p {
		if obj == nil {
			return nil
		}
		obj = p[i].apply(obj)
	}
	return obj
}

func (s *step) apply(obj any) any {
	if s.list {
		l, ok := obj.([]any)
		if !ok {
			return nil
		}
		for _, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			c, set := m[s.key]
			if !set {
				continue
			}
			if cs, ok := c.(string); ok && cs == s.value {
				return m
			}
			if s.isNum {
				if n, err := toFloat64(c, false); err == nil && n == s.num {
					return m
				}
			}
			if s.isBool {
				if b, ok := c.(bool); ok && b == s.bool {
					return m
				}
			}
		}
		return nil
	}
	switch o := obj.(type) {
	case map[string]any:
		if s.hasEq {
			if v, ok := o[s.eqKey]; ok {
				if vs, ok := v.(string); ok && vs == s.eqValue {
					return v
				}
			}
		}
		return o[s.part]
	case []any:
		if !s.isIndex {
			return nil
		}
		i := s.index
		if i < 0 {
			i += len(o)
		}
		if i < 0 || i >= len(o) {
			return nil
		}
		return o[i]
	}
	return nil
}

// String writes the path as kube-state-metrics does in messages: [a,b].
func (p path) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[i].part)
	}
	b.WriteByte(']')
	return b.String()
}

// toFloat64 is kube-state-metrics' value parsing: numbers; booleans; the
// strings true/yes (1), false/no/unknown (0, any case); RFC 3339 times
// (Unix seconds); quantities ("25m", "5Gi"); percentages ("50%" is 0.5);
// then any float. nil is 0 with nilIsZero, else an error.
func toFloat64(value any, nilIsZero bool) (float64, error) {
	switch v := value.(type) {
	case nil:
		if nilIsZero {
			return 0, nil
		}
		return 0, fmt.Errorf("expected number but found nil value")
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case string:
		return parseString(v)
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case int32:
		return float64(v), nil
	case uint8:
		return float64(v), nil
	case uint:
		return float64(v), nil
	case uint32:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case float32:
		return float64(v), nil
	}
	return 0, fmt.Errorf("expected number but was %v", value)
}

func parseString(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "true", "yes":
		return 1, nil
	case "false", "no", "unknown":
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return float64(t.Unix()), nil
	}
	if q, err := resource.ParseQuantity(s); err == nil {
		return q.AsApproximateFloat64(), nil
	}
	if len(validation.IsValidPercent(s)) == 0 {
		f, err := strconv.ParseFloat(strings.TrimRight(s, "%"), 64)
		return f / 100, err
	}
	return strconv.ParseFloat(s, 64)
}

// durationSeconds parses a Go duration string ("2160h", "1m30s") into
// seconds, for the valueType: duration extension; other values parse as
// toFloat64 does.
func durationSeconds(value any, nilIsZero bool) (float64, error) {
	s, ok := value.(string)
	if !ok {
		return toFloat64(value, nilIsZero)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return math.NaN(), fmt.Errorf("parsing duration: %w", err)
	}
	return d.Seconds(), nil
}

// labelValue formats a value as a label, as fmt's %v does (what
// kube-state-metrics uses), without fmt for the common types.
func labelValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprintf("%v", v)
}
