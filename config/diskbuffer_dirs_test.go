package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two endpoints never share a disk buffer directory, nor hold one inside
// the other's: compared absolute, cleaned, and through symbolic links;
// siblings that merely share a name prefix are fine.
func TestDiskBufferDirectoriesApart(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "real"), 0o700))
	require.NoError(t, os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")))
	t.Chdir(root)
	load := func(a, b string) error {
		_, err := Load([]byte("remote_write:\n"+
			"  - {url: http://a/w, name: a, disk_buffer: {directory: "+a+"}}\n"+
			"  - {url: http://b/w, name: b, disk_buffer: {directory: "+b+"}}\n"), "c.yaml")
		return err
	}
	for _, tc := range []struct{ a, b, want string }{
		{"buf", root + "/buf", "is also the disk buffer directory of remote_write[0] (a)"},
		{"real/x", "link/x", "is also the disk buffer directory of remote_write[0] (a)"},
		{"link", "real/x/y", "lies inside the disk buffer directory of remote_write[0] (a)"},
		{"buf/b", "buf", "holds the disk buffer directory of remote_write[0] (a)"},
	} {
		err := load(tc.a, tc.b)
		require.ErrorContains(t, err, "c.yaml:3: remote_write[1].disk_buffer.directory: ", "%s %s", tc.a, tc.b)
		require.ErrorContains(t, err, "of endpoint b "+tc.want, "%s %s", tc.a, tc.b)
	}
	require.NoError(t, load("buf", "buf2"))
	require.NoError(t, load("buf/a", "buf/b"))
	require.NoError(t, load("real/a", "link/b"))
}
