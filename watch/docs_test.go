package watch

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/metrics.md must list exactly the families the code renders.
func TestMetricsDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../docs/metrics.md")
	require.NoError(t, err, "run: go run ./internal/docgen")
	lb, err := os.ReadFile("../docs/labels.json")
	require.NoError(t, err)
	var labels map[string][]string
	require.NoError(t, json.Unmarshal(lb, &labels))
	require.Equal(t, MetricsMarkdown(labels), string(b), "docs/metrics.md is stale: run go run ./internal/docgen")
	// Every family the code renders has its labels documented.
	for _, r := range All() {
		for _, f := range r.Families(FamilyOptions{}) {
			_, ok := labels[f.Name]
			require.True(t, ok, "docs/labels.json lacks %s", f.Name)
		}
	}
}
