package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/internal/redact"
)

// How YAML and validation errors become "file:line: key: message" lines
// that never quote a secret.

// yamlFieldRE matches yaml.v3's message for an unknown key.
var yamlFieldRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)

// yamlValueRE matches the value yaml.v3 quotes in a type error, "!!str
// `hunter2` into "; the last " into " ends it, since a type name has no
// backquote.
var yamlValueRE = regexp.MustCompile("(!!\\S+) `.*` into ")

// yamlLineRE matches a YAML error that names a line.
var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError formats a YAML syntax error as "file:line: message".
func syntaxError(name string, err error) error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", name, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(msg, "yaml: "))
}

// decodeError rewrites yaml.v3's type errors as "file:line: key: message",
// one per line.
func decodeError(name string, root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if key, line, rerr := relabelError(root); rerr != nil {
			return fmt.Errorf("%s:%d: %s: %w", name, line, key, rerr)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			// prometheus/common's URL type (proxy_url) returns url.Parse's
			// error, which quotes the whole URL, perhaps a password.
			if key, line := badURL(root); key != "" {
				return fmt.Errorf("%s:%d: %s: is not a valid URL (%s)", name, line, key, redact.ParseError(err))
			}
			return fmt.Errorf("%s: a URL is not valid (%s)", name, redact.ParseError(err))
		}
		return fmt.Errorf("%s: %s", name, redact.Text(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	var errs []error
	for _, e := range te.Errors {
		if m := yamlFieldRE.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			key := keyAt(root, line)
			if key == "" {
				key = m[2]
			}
			// A key typed in a block of secrets (basic_auth: {hunter2: x})
			// may be the secret itself: name the block, not the key.
			if i := strings.LastIndexByte(key, '.'); i > 0 {
				if _, secret := confkey.Secret(key[:i]); secret {
					errs = append(errs, fmt.Errorf("%s:%d: %s: unknown key (its name is not shown: a key typed among secrets may be one)", name, line, key[:i]))
					continue
				}
			}
			errs = append(errs, fmt.Errorf("%s:%d: %s: unknown key", name, line, key))
			continue
		}
		if m := yamlLineRE.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			key, msg := keyAt(root, line), m[2]
			// yaml.v3 quotes (the start of) the value it could not decode,
			// which on a secret-bearing key may be the secret.
			if secretLine(root, line) || key == "" {
				msg = yamlValueRE.ReplaceAllString(msg, "$1 `<secret>` into ")
				key, _ = confkey.Secret(key)
			}
			if key != "" {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %s", name, line, key, msg))
				continue
			}
			errs = append(errs, fmt.Errorf("%s:%d: %s", name, line, msg))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s", name, e))
	}
	return errors.Join(errs...)
}

// relabelError finds the first write_relabel_configs rule that does not
// decode, and returns its key, line and error. Prometheus' relabel types
// report a bad action or regular expression from their UnmarshalYAML as a
// plain error, without the line that yaml.v3 gives its own type errors.
func relabelError(root *yaml.Node) (key string, line int, err error) {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	endpoints := mappingValue(doc, "remote_write")
	if endpoints == nil || endpoints.Kind != yaml.SequenceNode {
		return "", 0, nil
	}
	for i, ep := range endpoints.Content {
		rules := mappingValue(ep, "write_relabel_configs")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			continue
		}
		for j, rule := range rules.Content {
			var rc relabel.Config
			if err := rule.Decode(&rc); err != nil {
				return confkey.Index(confkey.Index("remote_write", i)+".write_relabel_configs", j), rule.Line, err
			}
		}
	}
	return "", 0, nil
}

// badURL returns the key and line of the first proxy_url whose value
// url.Parse refuses, or "" if none is.
func badURL(root *yaml.Node) (key string, line int) {
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if key != "" {
			return
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + p
				}
				if k.Value == "proxy_url" && v.Kind == yaml.ScalarNode {
					if _, err := url.Parse(v.Value); err != nil {
						key, line = p, k.Line
						return
					}
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, confkey.Index(path, i))
			}
		}
	}
	walk(root, "")
	return key, line
}

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// keyAt returns the dotted path (as confkey writes it) of the deepest key or
// list element that starts on line, or "" if none does.
func keyAt(root *yaml.Node, line int) string {
	best, bestDepth := "", -1
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, depth)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				// A value may start on a line of its own, below its key.
				if (k.Line == line || n.Content[i+1].Line == line) && depth > bestDepth {
					best, bestDepth = p, depth
				}
				walk(n.Content[i+1], p, depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := confkey.Index(path, i)
				if c.Line == line && depth > bestDepth {
					best, bestDepth = p, depth
				}
				walk(c, p, depth+1)
			}
		}
	}
	walk(root, "", 0)
	return best
}

// secretLine reports whether a key or value that starts on line is, or
// lies inside, a secret-bearing key (confkey.Secret), or whether nothing
// does, so that no error quotes a value of it.
func secretLine(root *yaml.Node, line int) bool {
	found, secret := false, false
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Line == line {
			found = true
			if _, s := confkey.Secret(path); s {
				secret = true
			}
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				walk(n.Content[i], p)
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, confkey.Index(path, i))
			}
		}
	}
	walk(root, "")
	return secret || !found
}

// keyErrors formats validation errors as "file:line: key: message", with
// the line of the key (or of its nearest parent present in the file).
func keyErrors(name string, root *yaml.Node, err error) error {
	var errs []error
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = flatten(j.Unwrap())
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var ke *confkey.Error
		if errors.As(e, &ke) {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, confkey.Line(root, ke.Key), e))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, e))
	}
	return errors.Join(errs...)
}

func flatten(errs []error) []error {
	var out []error
	for _, e := range errs {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(j.Unwrap())...)
			continue
		}
		out = append(out, e)
	}
	return out
}
