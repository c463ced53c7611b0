package testenv

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Label is one label of a parsed series.
type Label struct{ Name, Value string }

// FormatSeries writes a series key: `name{a="x",b="y"}` with labels sorted
// by name and empty values left out (Prometheus treats them as absent).
func FormatSeries(name string, ls []Label) string {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	first := true
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// ParseExposition parses Prometheus text exposition (as kube-state-metrics
// serves it) into series keys (see FormatSeries) and values. Comment lines
// are skipped.
func ParseExposition(text string) (map[string]float64, error) {
	out := map[string]float64{}
	for n, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w: %q", n+1, err, line)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: series %s appears twice", n+1, key)
		}
		out[key] = value
	}
	return out, nil
}

func parseSample(line string) (string, float64, error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", 0, fmt.Errorf("no value")
	}
	name := line[:i]
	rest := line[i:]
	var ls []Label
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, "=")
			if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return "", 0, fmt.Errorf("bad label")
			}
			lname := rest[:eq]
			val, n, err := unquote(rest[eq+1:])
			if err != nil {
				return "", 0, err
			}
			ls = append(ls, Label{Name: lname, Value: val})
			rest = rest[eq+1+n:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, fmt.Errorf("no value")
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return "", 0, err
	}
	return FormatSeries(name, ls), v, nil
}

// unquote reads a double-quoted label value with \\, \" and \n escapes and
// returns it and the number of bytes read.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i >= len(s) {
				return "", 0, fmt.Errorf("unterminated escape")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated label value")
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

func sortInt64(s []int64) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }
