package agent

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
		err                 string
	}{
		{"v2 limit", "memory.max", "536870912\n", 536870912, ""},
		{"v2 no limit", "memory.max", "max\n", 0, ""},
		{"v1 limit", "memory/memory.limit_in_bytes", "268435456\n", 268435456, ""},
		{"v1 no limit", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0, ""},
		{"no cgroup files", "", "", 0, ""},
		{"garbage", "memory.max", "lots\n", 0, `memory.max: "lots" is not a number of bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				p := filepath.Join(root, tc.file)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
			}
			got, err := cgroupMemoryLimit(root)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSetMemoryLimitFromCgroup(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644))

	t.Run("from the cgroup", func(t *testing.T) {
		if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
			t.Skip("GOMEMLIMIT is set in the test's environment")
		}
		got, err := SetMemoryLimitFromCgroup(root)
		require.NoError(t, err)
		require.Equal(t, int64(900000000), got)
		require.Equal(t, int64(900000000), debug.SetMemoryLimit(-1))
	})
	t.Run("GOMEMLIMIT wins", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "2GiB")
		debug.SetMemoryLimit(old)
		got, err := SetMemoryLimitFromCgroup(root)
		require.NoError(t, err)
		require.Zero(t, got)
		require.Equal(t, old, debug.SetMemoryLimit(-1))
	})
}

func TestSetGCPercentDefault(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	t.Run("GOGC wins", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		require.Zero(t, SetGCPercentDefault())
		require.Equal(t, 100, debug.SetGCPercent(100))
	})
	t.Run("the default", func(t *testing.T) {
		if _, ok := os.LookupEnv("GOGC"); ok {
			t.Skip("GOGC is set in the test's environment")
		}
		require.Equal(t, gcPercent, SetGCPercentDefault())
		require.Equal(t, gcPercent, debug.SetGCPercent(100))
	})
}
