package watch

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// renderText renders obj with the resource's families restricted to the
// named ones (all non-opt-in families when names is empty, opt-in ones too
// when named) and returns the series as sorted exposition lines:
// `name{a="x",b="y"} value`, labels sorted, `__name__` as the name.
func renderText(t *testing.T, r *Resource, opts FamilyOptions, obj any, names ...string) string {
	t.Helper()
	sel := func(f FamilyInfo) bool { return !f.OptIn }
	if len(names) > 0 {
		sel = func(f FamilyInfo) bool {
			for _, n := range names {
				if f.Name == n {
					return true
				}
			}
			return false
		}
	}
	rr := r.NewRenderer(RenderOptions{Families: opts, Select: sel})
	_, set, err := rr.Render(obj)
	require.NoError(t, err)
	return seriesText(t, &set)
}

// seriesText formats a series set as sorted exposition lines.
func seriesText(t *testing.T, set *encode.SeriesSet) string {
	t.Helper()
	lines := make([]string, 0, set.Len())
	for i := 0; i < set.Len(); i++ {
		ls, err := encode.DecodeLabels(set.Labels(i))
		require.NoError(t, err)
		var name string
		var parts []string
		for _, l := range ls {
			if l.Name == encode.MetricName {
				name = l.Value
				continue
			}
			parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
		}
		lines = append(lines, name+"{"+strings.Join(parts, ",")+"} "+formatValue(set.Refs[i].Value))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// requireGolden compares rendered text with the expected lines (leading and
// trailing space on each line ignored, order ignored) and fails with a
// (-want +got) diff.
func requireGolden(t *testing.T, want, got string) {
	t.Helper()
	norm := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		sort.Strings(out)
		return out
	}
	if d := cmp.Diff(norm(want), norm(got)); d != "" {
		t.Fatalf("series mismatch (-want +got):\n%s", d)
	}
}
