package watch

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/metrics.md must list exactly the families the code renders.
func TestMetricsDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../docs/metrics.md")
	require.NoError(t, err, "run: go run ./internal/docgen")
	require.Equal(t, MetricsMarkdown(), string(b), "docs/metrics.md is stale: run go run ./internal/docgen")
}
