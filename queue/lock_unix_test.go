//go:build unix

package queue

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A lock file that is a symbolic link is refused, its target untouched.
func TestLockDirRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "lock")))
	_, err := lockDir(dir)
	require.ErrorContains(t, err, "is a symbolic link, which the disk buffer does not follow")
	_, err = os.Lstat(target)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing created through the link")
	f, err := lockDir(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
