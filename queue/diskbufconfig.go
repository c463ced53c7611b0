package queue

import (
	"errors"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// DiskBufferConfig turns on an endpoint's on-disk buffer: every snapshot is
// written to disk (as its difference from the one before) before it counts
// as queued, and sent from there, so that neither a receiver outage nor a
// killed agent loses samples.
type DiskBufferConfig struct {
	// Directory holds the endpoint's buffer; empty keeps batches in memory
	// only. Each endpoint needs a directory of its own (it is locked while
	// the endpoint runs); it is created if missing.
	Directory string `yaml:"directory,omitempty"`
	// MaxBytes caps the buffer's size on disk, the whole directory; past it
	// the oldest snapshots are dropped whole and counted (reason
	// buffer_full).
	MaxBytes int64 `yaml:"max_bytes,omitempty"`
}

// DefaultDiskBufferConfig holds the defaults: no directory (memory only), a
// 1 GiB cap.
var DefaultDiskBufferConfig = DiskBufferConfig{MaxBytes: 1 << 30}

// minDiskBufferBytes is the smallest max_bytes: room for a few segments of
// a small cluster.
const minDiskBufferBytes = 1 << 20

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (d *DiskBufferConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*d = DefaultDiskBufferConfig
	type plain DiskBufferConfig
	return unmarshal((*plain)(d))
}

// Enabled reports whether snapshots go to disk.
func (d *DiskBufferConfig) Enabled() bool { return d.Directory != "" }

// Validate checks the settings. Keys in errors are relative to disk_buffer.
func (d *DiskBufferConfig) Validate() error {
	var errs []error
	if d.MaxBytes < minDiskBufferBytes {
		errs = append(errs, confkey.Errorf("max_bytes", "must be at least %d (1 MiB), not %d", minDiskBufferBytes, d.MaxBytes))
	}
	return errors.Join(errs...)
}
