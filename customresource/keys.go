package customresource

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// unknownKeys returns an error for every key of the parsed document that no
// field of the Document type has. yaml.v3 checks unknown keys only through
// a Decoder (KnownFields), not when a node is decoded, so the document's
// keys are checked against its type's yaml tags here.
func unknownKeys(n *yaml.Node, doc *Document) []error {
	if n == nil {
		return nil
	}
	var errs []error
	walkKeys(n, reflect.TypeOf(doc).Elem(), "", &errs)
	return errs
}

func walkKeys(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			walkKeys(c, t, path, errs)
		}
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error, which Decode reports
		}
		fields := map[string]reflect.Type{}
		structFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			p := joinKey(path, k)
			ft, ok := fields[k]
			if !ok {
				*errs = append(*errs, errorf(p, "unknown key"))
				continue
			}
			walkKeys(n.Content[i+1], ft, p, errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			walkKeys(c, t.Elem(), confkey.Index(path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkKeys(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value), errs)
		}
	}
}

// structFields maps the yaml names of t's fields to their types, with the
// fields of inlined structs.
func structFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			structFields(f.Type, out)
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
