// Command docgen writes docs/metrics.md from the family lists in package
// watch. Run from the repository root: go run ./internal/docgen
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/kube-state-push/kube-state-push/watch"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run() error {
	b, err := os.ReadFile("docs/labels.json")
	if err != nil {
		return err
	}
	var labels map[string][]string
	if err := json.Unmarshal(b, &labels); err != nil {
		return fmt.Errorf("reading docs/labels.json: %w", err)
	}
	return os.WriteFile("docs/metrics.md", []byte(watch.MetricsMarkdown(labels)), 0o644)
}
