package watch

import (
	"fmt"
	"strings"
)

// MetricsMarkdown renders the list of every family of every resource as a
// Markdown document: docs/metrics.md is this output, and a test keeps it so.
func MetricsMarkdown() string {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from the code by `go run ./internal/docgen`; a test checks that it is current.\n")
	b.WriteString("Names, labels and values are those of kube-state-metrics v2.20.\n")
	b.WriteString("Families marked opt-in are rendered only when asked for; `_labels` and `_annotations`\n")
	b.WriteString("families emit nothing until their allowlist names the resource.\n")
	for _, r := range All() {
		fs := r.Families(FamilyOptions{})
		fmt.Fprintf(&b, "\n## %s (%d families)\n\n", r.Name, len(fs))
		b.WriteString("| family | type | stability | opt-in | help |\n|---|---|---|---|---|\n")
		for _, f := range fs {
			opt := ""
			if f.OptIn {
				opt = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Type, f.Stability, opt, strings.ReplaceAll(f.Help, "|", `\|`))
		}
	}
	return b.String()
}
