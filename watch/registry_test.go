package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The families per resource must match kube-state-metrics v2.20.0
// (internal/store/*.go): the same count and no name twice.
func TestFamilyCounts(t *testing.T) {
	want := map[string]int{"pods": 60, "nodes": 13}
	for _, r := range All() {
		t.Run(r.Name, func(t *testing.T) {
			fs := r.Families(FamilyOptions{})
			seen := map[string]bool{}
			for _, f := range fs {
				require.False(t, seen[f.Name], "family %s listed twice", f.Name)
				seen[f.Name] = true
				require.NotEmpty(t, f.Help, f.Name)
			}
			require.Equal(t, want[r.Name], len(fs))
		})
	}
}

func TestLookup(t *testing.T) {
	r, ok := Lookup("pods")
	require.True(t, ok)
	require.Equal(t, "pods", r.Name)
	_, ok = Lookup("pod")
	require.False(t, ok)
	require.Equal(t, []string{"nodes", "pods"}, Names())
}
