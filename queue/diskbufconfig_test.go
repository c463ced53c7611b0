package queue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestDiskBufferConfig(t *testing.T) {
	load := func(t *testing.T, text string) Config {
		t.Helper()
		var c Config
		require.NoError(t, yaml.Unmarshal([]byte(text), &c))
		return c
	}
	t.Run("default: memory only, 1 GiB cap", func(t *testing.T) {
		c := load(t, "url: http://r.example/api/v1/write\n")
		require.False(t, c.DiskBuffer.Enabled())
		require.Equal(t, int64(1<<30), c.DiskBuffer.MaxBytes)
		require.NoError(t, c.Validate())
	})
	t.Run("directory, cap left out", func(t *testing.T) {
		c := load(t, "url: http://r.example/api/v1/write\ndisk_buffer:\n  directory: /var/lib/ksp/r\n")
		require.True(t, c.DiskBuffer.Enabled())
		require.Equal(t, "/var/lib/ksp/r", c.DiskBuffer.Directory)
		require.Equal(t, int64(1<<30), c.DiskBuffer.MaxBytes)
		require.NoError(t, c.Validate())
	})
	t.Run("cap too small", func(t *testing.T) {
		c := load(t, "url: http://r.example/api/v1/write\ndisk_buffer:\n  directory: /x\n  max_bytes: 1000\n")
		require.EqualError(t, c.Validate(), "disk_buffer.max_bytes: must be at least 1048576 (1 MiB), not 1000")
	})
	t.Run("unknown key", func(t *testing.T) {
		var c Config
		dec := yaml.NewDecoder(strings.NewReader("url: http://r.example/\ndisk_buffer:\n  dir: /x\n"))
		dec.KnownFields(true)
		require.ErrorContains(t, dec.Decode(&c), "field dir not found")
	})
	t.Run("round trip", func(t *testing.T) {
		c := load(t, "url: http://r.example/api/v1/write\ndisk_buffer:\n  directory: /d\n  max_bytes: 2097152\n")
		out, err := yaml.Marshal(&c)
		require.NoError(t, err)
		require.Contains(t, string(out), "disk_buffer:\n    directory: /d\n    max_bytes: 2097152\n")
		require.Equal(t, c.DiskBuffer, load(t, string(out)).DiskBuffer)
	})
}
