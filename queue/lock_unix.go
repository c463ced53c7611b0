//go:build unix

package queue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir/lock, so that two
// endpoints (or two agents sharing a volume) never use one buffer
// directory at once. The lock ends with the returned file's Close, or with
// the process.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lock")
	// O_NOFOLLOW: a link placed there would have the agent create or
	// lock a file of another's choosing.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
		return nil, fmt.Errorf("opening lock file: %s is a symbolic link, which the disk buffer does not follow", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another endpoint or process", dir)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}
