// Command docgen writes docs/metrics.md from the family lists in package
// watch. Run from the repository root: go run ./internal/docgen
package main

import (
	"fmt"
	"os"

	"github.com/kube-state-push/kube-state-push/watch"
)

func main() {
	if err := os.WriteFile("docs/metrics.md", []byte(watch.MetricsMarkdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}
