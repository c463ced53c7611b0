package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// openMetricsAccept is what a Prometheus that prefers OpenMetrics sends.
const openMetricsAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// requireSameExposition scrapes kube-state-metrics' /metrics and the agent's
// pull endpoint in the text format, in OpenMetrics, and (the agent's) with
// gzip, and requires the same lines, HELP and TYPE included, but for the
// intentional differences of the series comparison.
func requireSameExposition(t *testing.T, ctx context.Context, ksmURL, oursURL string) {
	t.Helper()
	for _, c := range []struct {
		name   string
		accept string
		format string
	}{
		{"text", "", "text/plain; version=0.0.4"},
		{"openmetrics", openMetricsAccept, "application/openmetrics-text; version=1.0.0"},
	} {
		h := map[string]string{}
		if c.accept != "" {
			h["Accept"] = c.accept
		}
		want, err := testenv.ScrapeWith(ctx, ksmURL+"/metrics", h)
		require.NoError(t, err)
		got, err := testenv.ScrapeWith(ctx, oursURL+"/metrics", h)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(want.ContentType, c.format), "kube-state-metrics answered %q", want.ContentType)
		require.True(t, strings.HasPrefix(got.ContentType, c.format), "%s: answered %q", c.name, got.ContentType)
		diff := exposedLineDiff(want.Body, got.Body)
		if d := os.Getenv("KSP_DUMP_EXPOSITION"); d != "" {
			_ = os.WriteFile(filepath.Join(d, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"."+c.name+".ksm"), []byte(want.Body), 0o644)
			_ = os.WriteFile(filepath.Join(d, t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"."+c.name+".ours"), []byte(got.Body), 0o644)
		}
		t.Logf("%s: %d lines from kube-state-metrics, %d from the agent, %d unexplained differences",
			c.name, strings.Count(want.Body, "\n"), strings.Count(got.Body, "\n"), len(diff))
		if len(diff) > 0 {
			if len(diff) > 100 {
				diff = append(diff[:100], fmt.Sprintf("... and %d more", len(diff)-100))
			}
			t.Fatalf("%s exposition differs from kube-state-metrics':\n%s", c.name, strings.Join(diff, "\n"))
		}
		if c.name == "openmetrics" {
			require.True(t, strings.HasSuffix(got.Body, "\n# EOF\n"), "OpenMetrics ends with # EOF")
		}
		h["Accept-Encoding"] = "gzip"
		zipped, err := testenv.ScrapeWith(ctx, oursURL+"/metrics", h)
		require.NoError(t, err)
		require.Equal(t, "gzip", zipped.ContentEncoding, "%s: gzip asked for", c.name)
		require.Empty(t, exposedLineDiff(got.Body, zipped.Body), "%s: the gzipped body holds the same lines", c.name)
	}
}

// exposedLineDiff compares two exposition texts line by line after sorting,
// and returns the lines only one side has, except those of an intentional
// difference.
func exposedLineDiff(want, got string) []string {
	w := strings.Split(want, "\n")
	g := strings.Split(got, "\n")
	slices.Sort(w)
	slices.Sort(g)
	var out []string
	skip := func(line string) bool {
		if line == "" || line[0] == '#' {
			return false
		}
		m, err := testenv.ParseExposition(line)
		if err != nil {
			return false
		}
		for k := range m {
			return intentional(k) >= 0
		}
		return false
	}
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case j == len(g) || (i < len(w) && w[i] < g[j]):
			if !skip(w[i]) {
				out = append(out, "only in kube-state-metrics: "+w[i])
			}
			i++
		case i == len(w) || g[j] < w[i]:
			if !skip(g[j]) {
				out = append(out, "only in kube-state-push:    "+g[j])
			}
			j++
		default:
			i++
			j++
		}
	}
	return out
}
