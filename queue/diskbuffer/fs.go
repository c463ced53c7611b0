package diskbuffer

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// File is what the log needs of an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync commits the file's contents to stable storage.
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	// Close closes the file.
	Close() error
}

// FS is the filesystem seam: the operations the log performs, so that a
// test can make them fail (a full disk) and see the log recover.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file.
	Remove(name string) error
	// Rename renames a file, replacing newname.
	Rename(oldname, newname string) error
	// ReadDir lists a directory.
	ReadDir(name string) ([]os.DirEntry, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string, perm os.FileMode) error
	// SyncDir fsyncs a directory, so that entries created, renamed or
	// removed in it survive a machine crash.
	SyncDir(name string) error
}

// OSFS is the operating system's filesystem, the default, for a test's FS
// to wrap.
var OSFS FS = osFS{}

// osFS is the operating system's filesystem.
type osFS struct{}

// ErrSymlink is the error of opening a file of the disk buffer that is a
// symbolic link. The buffer never follows one: whoever could place it in
// the directory would have the agent write (or read) any file it may.
var ErrSymlink = errors.New("is a symbolic link, which the disk buffer does not follow")

// OpenFile opens name without following a symbolic link (O_NOFOLLOW, or an
// Lstat first where the system has none); a link gives a *os.PathError
// wrapping ErrSymlink.
func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if oNoFollow == 0 && isSymlink(name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrSymlink}
	}
	f, err := os.OpenFile(name, flag|oNoFollow, perm)
	if err != nil && isSymlink(name) {
		// ELOOP on Linux and macOS, EMLINK on FreeBSD: told apart by
		// looking.
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrSymlink}
	}
	return f, err
}

// isSymlink reports whether name is a symbolic link.
func isSymlink(name string) bool {
	fi, err := os.Lstat(name)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("opening directory to sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory: %w", err)
	}
	return nil
}
