package watch

import (
	"fmt"
	"strings"
)

// MetricsMarkdown renders the list of every family of every resource as a
// Markdown document: docs/metrics.md is this output, and a test keeps it so.
// labels gives each family's label names (docs/labels.json, which the
// compatibility test checks against kube-state-metrics' own output).
func MetricsMarkdown(labels map[string][]string) string {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from the code by `go run ./internal/docgen`; a test checks that it is current.\n")
	b.WriteString("Names, labels and values are those of kube-state-metrics v2.20.\n")
	b.WriteString("Families marked opt-in are rendered only when asked for; `_labels` and `_annotations`\n")
	b.WriteString("families emit nothing until their allowlist names the resource.\n")
	b.WriteString("Labels are those kube-state-metrics itself emits on the test fixtures (docs/labels.json, checked by\n")
	b.WriteString("e2e/compat_test.go); `label_*`, `annotation_*`, `nodeselector_*` and `metadata_*` stand for names made\n")
	b.WriteString("from Kubernetes keys. A label with an empty value is left out of a series.\n")
	for _, r := range All() {
		fs := r.Families(FamilyOptions{})
		fmt.Fprintf(&b, "\n## %s (%d families)\n\n", r.Name, len(fs))
		b.WriteString("| family | type | stability | opt-in | labels | help |\n|---|---|---|---|---|---|\n")
		for _, f := range fs {
			opt := ""
			if f.OptIn {
				opt = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", f.Name, f.Type, f.Stability, opt,
				strings.Join(labels[f.Name], ", "), strings.ReplaceAll(f.Help, "|", `\|`))
		}
	}
	return b.String()
}
