package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFootprintFlags(t *testing.T) {
	o, err := parseFootprintFlags(nil)
	require.NoError(t, err)
	require.Equal(t, clusterSpec{pods: 150, nodes: 3, containers: 2, namespaces: 3}, o.spec)
	require.Equal(t, 30*time.Second, o.interval)
	require.True(t, o.ksm)
	require.True(t, o.diskBuffer)
	for _, args := range [][]string{{"-interval", "500ms"}, {"-window", "10s"}, {"-churn", "-1"}, {"-pods", "0"}, {"extra"}} {
		_, err := parseFootprintFlags(args)
		require.Error(t, err, "%v", args)
	}
}

// This test process' own /proc: its memory adds up, its mappings are
// sorted largest first, and its binary has resident pages.
func TestFootprintProcReaders(t *testing.T) {
	m, err := readMemory(os.Getpid())
	require.NoError(t, err)
	require.NotZero(t, m.rss)
	require.GreaterOrEqual(t, m.hwm, m.rss)
	require.LessOrEqual(t, m.anon+m.file, m.rss)

	maps, err := topMappings(os.Getpid())
	require.NoError(t, err)
	require.NotEmpty(t, maps)
	for i := 1; i < len(maps); i++ {
		require.LessOrEqual(t, maps[i].rss>>10, maps[i-1].rss>>10, "sorted largest first")
	}

	exe, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "pages")
	require.NoError(t, residentPages(os.Getpid(), exe, path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, strings.Fields(string(b)), "resident pages of the test binary")
}
