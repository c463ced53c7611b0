package confkey

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Line finds the line of a key path such as
// "remote_write[0].queue_config.max_shards" in a parsed document, falling
// back to the deepest part of the path that exists (1 if none does, or for
// a nil root).
func Line(root *yaml.Node, key string) int {
	n := root
	if n == nil {
		return 1
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := max(n.Line, 1)
	for _, part := range strings.FieldsFunc(key, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		var next *yaml.Node
		switch n.Kind {
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// Regexps compiles the patterns of a list key as metric_allowlist's are:
// Go regular expressions, unanchored; each error names its index.
func Regexps(key string, patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	var errs []error
	for i, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, Errorf(Index(key, i), "invalid regular expression %q: %v", p, err))
			continue
		}
		out = append(out, re)
	}
	return out, errors.Join(errs...)
}
