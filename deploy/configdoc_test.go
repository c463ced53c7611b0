package deploy_test

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/customresource"
)

// module is the import path prefix of this repository's packages: the
// configuration keys of their types are ours to document; an imported
// type's keys (prometheus/common's tls_config, say) are documented where
// it comes from.
const module = "github.com/kube-state-push/kube-state-push/"

// yamlKeys collects the yaml keys of t's fields, and of the fields of this
// module's struct types below them, by the package that declares each.
func yamlKeys(t reflect.Type, into map[string]map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), module) || seen[t] {
		return
	}
	seen[t] = true
	pkg := strings.TrimPrefix(t.PkgPath(), module)
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (name == "" && !strings.Contains(opts, "inline")) {
			continue
		}
		if name != "" {
			if into[pkg] == nil {
				into[pkg] = map[string]bool{}
			}
			into[pkg][name] = true
		}
		yamlKeys(f.Type, into, seen)
	}
}

// Every configuration key the code reads is documented: the agent's keys
// in docs/configuration.md, the Custom Resource State document's in
// docs/custom-resources.md, each as a `key` in code format.
func TestConfigKeysDocumented(t *testing.T) {
	keys := map[string]map[string]bool{}
	seen := map[reflect.Type]bool{}
	yamlKeys(reflect.TypeFor[config.Config](), keys, seen)
	// custom_resource_state holds a document or a file's path; its keys are
	// the document's.
	yamlKeys(reflect.TypeFor[customresource.Document](), keys, seen)
	require.NotEmpty(t, keys["customresource"])
	require.Contains(t, keys["queue"], "max_samples_per_send")

	// documented reads the names a page shows in code format: every part of
	// a `spec.resources[].metrics` path or a `key: value` counts.
	documented := func(path string) map[string]bool {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		out := map[string]bool{}
		text := strings.ReplaceAll(string(b), "```", "\n")
		for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(text, -1) {
			for _, part := range regexp.MustCompile(`[^A-Za-z0-9_]+`).Split(m[1], -1) {
				out[part] = true
			}
		}
		return out
	}
	configuration, customResources := documented("../docs/configuration.md"), documented("../docs/custom-resources.md")
	var missing []string
	for pkg, names := range keys {
		doc, page := configuration, "docs/configuration.md"
		if pkg == "customresource" {
			doc, page = customResources, "docs/custom-resources.md"
		}
		for name := range names {
			if !doc[name] {
				missing = append(missing, page+": "+name+" (package "+pkg+")")
			}
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "configuration keys the docs do not show")
}
