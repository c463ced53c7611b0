package diskbuf

import (
	"errors"
	"fmt"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// SyncPolicy says when appended records are fsynced to disk.
type SyncPolicy string

const (
	// SyncOnRotate fsyncs a segment when it is sealed, on [Buffer.Sync] and
	// on [Buffer.Close]. A killed process loses nothing (the page cache
	// survives it); a machine crash may lose the unsynced tail of the head.
	SyncOnRotate SyncPolicy = "rotate"
	// SyncAlways fsyncs after every Append and every checkpoint write.
	SyncAlways SyncPolicy = "always"
	// SyncNever leaves writeback to the kernel: safe against a killed
	// process only. For tmpfs, and for tests.
	SyncNever SyncPolicy = "never"
)

// Config configures one buffer directory.
type Config struct {
	// Dir is the buffer's directory; it is created if missing.
	Dir string `yaml:"dir"`
	// MaxSize caps the bytes of all segments; 0 means no cap. When an
	// append would pass it the oldest segments are dropped and counted.
	MaxSize int64 `yaml:"max_size_bytes,omitempty"`
	// MaxSegmentSize is the largest segment file; it also bounds one record.
	MaxSegmentSize int64 `yaml:"max_segment_size_bytes,omitempty"`
	// Sync is the fsync policy: "rotate" (default), "always" or "never".
	Sync SyncPolicy `yaml:"sync,omitempty"`
	// OnDrop, if set, is called with each unacknowledged record the size
	// cap deletes, while the buffer is locked: it must not call the Buffer
	// nor keep the record.
	OnDrop func(rec []byte) `yaml:"-"`
}

// DefaultConfig holds the defaults; Dir has none.
var DefaultConfig = Config{
	MaxSegmentSize: 8 << 20,
	Sync:           SyncOnRotate,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	return unmarshal((*plain)(c))
}

// minSegmentSize keeps segments large enough to hold a useful record.
const minSegmentSize = 4 << 10

// Validate checks the configuration; errors name the key (*confkey.Error).
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, confkey.Errorf("dir", "is required"))
	}
	if c.MaxSegmentSize < minSegmentSize {
		errs = append(errs, confkey.Errorf("max_segment_size_bytes", "must be at least %d, not %d", minSegmentSize, c.MaxSegmentSize))
	}
	if c.MaxSize < 0 || c.MaxSize > 0 && c.MaxSize < 2*c.MaxSegmentSize {
		errs = append(errs, confkey.Errorf("max_size_bytes", "must be 0 (no cap) or at least twice max_segment_size_bytes (%d), not %d", 2*c.MaxSegmentSize, c.MaxSize))
	}
	switch c.Sync {
	case SyncOnRotate, SyncAlways, SyncNever:
	default:
		errs = append(errs, confkey.Errorf("sync", "must be %q, %q or %q, not %q", SyncOnRotate, SyncAlways, SyncNever, c.Sync))
	}
	return errors.Join(errs...)
}

// ErrTooLarge is returned by Append for a record whose frame would not fit
// in one segment.
var ErrTooLarge = errors.New("diskbuf: record larger than max_segment_size_bytes")

// ErrEmpty is returned by Peek when every record has been acknowledged.
var ErrEmpty = errors.New("diskbuf: empty")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("diskbuf: closed")

// CorruptError describes data that could not be read: a segment whose tail
// is torn or whose record fails its CRC (the rest of that segment is
// skipped), or a checkpoint that cannot be used (reading restarts at the
// oldest segment).
type CorruptError struct {
	// File is the base name of the file, e.g. "00000003.seg".
	File string
	// Offset is where the bad record starts; 0 for a checkpoint.
	Offset int64
	// Reason says what is wrong.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("diskbuf: corrupt %s at offset %d: %s", e.File, e.Offset, e.Reason)
}
