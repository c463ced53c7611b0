package diskbuffer

import (
	"errors"
	"fmt"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// SyncPolicy says when appended frames are fsynced to disk.
type SyncPolicy string

const (
	// SyncOnRotate fsyncs a segment when it is sealed, new files, and on
	// Close. A killed process loses nothing (the page cache survives it);
	// a machine crash may lose the unsynced tail of the head.
	SyncOnRotate SyncPolicy = "rotate"
	// SyncAlways fsyncs after every Append and every checkpoint write.
	SyncAlways SyncPolicy = "always"
	// SyncNever leaves writeback to the kernel: safe against a killed
	// process only. For tmpfs, and for tests.
	SyncNever SyncPolicy = "never"
)

// Config configures one disk buffer directory.
type Config struct {
	// Dir is the log's directory; it is created (mode 0700) if missing.
	Dir string `yaml:"dir"`
	// MaxBytes caps the bytes of all segments; 0 means no cap. Past it the
	// oldest whole segments are deleted and their unsent frames counted.
	MaxBytes int64 `yaml:"max_size_bytes,omitempty"`
	// Sync is the fsync policy: "always" (the default) fsyncs
	// every appended frame and every checkpoint, "rotate" only sealed
	// segments, new files and Close, "never" leaves it to the kernel.
	Sync SyncPolicy `yaml:"sync,omitempty"`
	// DeltaRatio starts a new segment with a keyframe once the deltas
	// since the last keyframe add up to this many times the keyframe's
	// size: 1 keeps the log within about twice the bytes of its deltas.
	DeltaRatio float64 `yaml:"delta_ratio,omitempty"`
	// OnDrop, if set, is called with the frames (and their samples) that
	// the size cap deleted before they were handed out. It runs during
	// Append and must not call the Log.
	OnDrop func(frames, samples int) `yaml:"-"`
	// FS is the filesystem; nil means the operating system's. For tests
	// that inject failures.
	FS FS `yaml:"-"`
	// partBytes, if not 0, replaces the constant partBytes: tests cut
	// their small frames into many records with it.
	partBytes int
}

// DefaultConfig holds the defaults; Dir has none.
var DefaultConfig = Config{
	Sync:       SyncAlways,
	DeltaRatio: 1,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	return unmarshal((*plain)(c))
}

// minMaxBytes keeps a cap large enough for a few segments of a small
// cluster.
const minMaxBytes = 1 << 20

// Validate checks the configuration; errors name the key (*confkey.Error).
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, confkey.Errorf("dir", "is required"))
	}
	if c.MaxBytes < 0 || c.MaxBytes > 0 && c.MaxBytes < minMaxBytes {
		errs = append(errs, confkey.Errorf("max_size_bytes", "must be 0 (no cap) or at least %d, not %d", minMaxBytes, c.MaxBytes))
	}
	switch c.Sync {
	case SyncOnRotate, SyncAlways, SyncNever:
	default:
		errs = append(errs, confkey.Errorf("sync", "must be %q, %q or %q, not %q", SyncAlways, SyncOnRotate, SyncNever, c.Sync))
	}
	if !(c.DeltaRatio > 0 && c.DeltaRatio <= 100) {
		errs = append(errs, confkey.Errorf("delta_ratio", "must be more than 0 and at most 100, not %v", c.DeltaRatio))
	}
	return errors.Join(errs...)
}

// ErrEmpty is returned by Next when every frame has been handed out.
var ErrEmpty = errors.New("diskbuffer: empty")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("diskbuffer: closed")

// CorruptError describes data that could not be read: a bad record, whose
// segment is skipped from there on (the frames after it are deltas on an
// unknown state), or a checkpoint that cannot be used.
type CorruptError struct {
	// File is the base name of the file, e.g. "00000003.seg".
	File string
	// Offset is where the bad record starts; 0 for a checkpoint.
	Offset int64
	// Reason says what is wrong.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("diskbuffer: corrupt %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Info describes a frame handed out by Next.
type Info struct {
	// Samples is the frame's sample count, staleness markers included.
	Samples int
	// Resent is set for a frame that was handed out before the log was
	// last opened and not acknowledged: it may have been delivered.
	Resent bool
	// Keyframe is set for a frame stored in full.
	Keyframe bool
}

// Stats are a Log's counters and sizes at one moment.
type Stats struct {
	// Bytes is the size of all segment files.
	Bytes int64
	// Segments is the number of segment files.
	Segments int
	// PendingFrames and PendingSamples are the frames not yet handed out
	// (as far as the segments' record headers tell).
	PendingFrames, PendingSamples int
	// InFlight is the number of frames handed out and not acknowledged.
	InFlight int
	// Appended, Keyframes and Acked count frames since Open.
	Appended, Keyframes, Acked uint64
	// DroppedFrames and DroppedSamples count what the size cap deleted
	// before it was handed out, since Open.
	DroppedFrames, DroppedSamples uint64
	// Corrupt counts bad records and checkpoints met since Open;
	// CorruptFrames the frames skipped because of them (the bad one and
	// the rest of its segment).
	Corrupt, CorruptFrames uint64
	// LastCorrupt describes the latest of them; nil if none.
	LastCorrupt *CorruptError
}
