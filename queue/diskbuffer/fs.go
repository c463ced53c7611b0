package diskbuffer

import (
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

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
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
