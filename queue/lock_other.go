//go:build !unix

package queue

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir/lock without locking it: advisory locks are only
// implemented on Unix, where the agent runs.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	return f, nil
}
