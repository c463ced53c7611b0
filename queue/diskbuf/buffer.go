package diskbuf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Stats are a Buffer's counters and sizes at one moment.
type Stats struct {
	// Appended counts records appended since Open.
	Appended uint64
	// Acked counts records acknowledged since Open.
	Acked uint64
	// Dropped counts unacknowledged records deleted by the size cap.
	Dropped uint64
	// Corrupt counts corrupt segments and checkpoints met since Open.
	Corrupt uint64
	// LastCorrupt describes the latest of them; nil if none.
	LastCorrupt *CorruptError
	// Segments is the number of segment files.
	Segments int
	// Bytes is the size of all segment files, read parts included.
	Bytes int64
}

// Buffer is an on-disk FIFO of records in one directory. See the package
// documentation for the file layout and the guarantees.
type Buffer struct {
	// cfg is the validated configuration.
	cfg Config
	// notEmpty gets a token after each Append, for a reader that found the
	// buffer empty; capacity 1, never closed.
	notEmpty chan struct{}

	// mu guards every field below, and the files they name: appends, reads,
	// segment rotation and deletion, and checkpoint writes.
	mu sync.Mutex
	// segs are the segment files, oldest first. segs[0] is the segment
	// being read (rd.seg); the last is the head being appended to. There
	// is always at least one while open.
	segs []segment
	// head is the last segment, open for writing at segs[len-1].size.
	head *os.File
	// rd is the position of the oldest unacknowledged record.
	rd position
	// rf reads segs[0]; nil until the next Peek needs it.
	rf *os.File
	// peeked is the record at rd returned by Peek and not yet acknowledged;
	// nil if none.
	peeked []byte
	// peekNext is the offset just after the last record handed out by Peek
	// or PeekNext and not yet acknowledged; all of them are in segs[0].
	peekNext int64
	// peekCount is the number of records handed out and not yet
	// acknowledged: 0 when peeked is nil.
	peekCount int
	// size is the sum of segs[i].size.
	size int64
	// frame is scratch space for Append.
	frame []byte
	// stats are the counters Stats returns.
	stats Stats
	// closed is set by Close.
	closed bool
}

// Open opens the buffer in cfg.Dir, creating the directory if needed, and
// resumes reading at the checkpoint. It always starts a fresh head segment
// (or reuses an empty last one), so that appends never follow a record torn
// by a crash.
func Open(cfg Config) (*Buffer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating buffer config: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating buffer directory: %w", err)
	}
	// A leftover temp checkpoint was never renamed: the old one holds.
	if err := os.Remove(filepath.Join(cfg.Dir, checkpointTmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing temporary checkpoint: %w", err)
	}
	segs, err := listSegments(cfg.Dir)
	if err != nil {
		return nil, err
	}
	b := &Buffer{cfg: cfg, notEmpty: make(chan struct{}, 1)}
	cp, err := readCheckpoint(cfg.Dir)
	var cerr *CorruptError
	switch {
	case errors.As(err, &cerr):
		b.corrupt(cerr)
	case err != nil && !errors.Is(err, errNoCheckpoint):
		return nil, err
	}
	// Find where to read: at the checkpoint, or the oldest segment.
	start := 0
	if err == nil && len(segs) > 0 && cp.seg >= segs[0].num {
		i := indexOf(segs, cp.seg)
		switch {
		case i < 0:
			b.corrupt(&CorruptError{File: checkpointName, Reason: fmt.Sprintf("points at missing segment %s", segmentName(cp.seg))})
		case cp.off > segs[i].size:
			b.corrupt(&CorruptError{File: checkpointName, Reason: fmt.Sprintf("offset %d is past the end of %s (%d bytes)", cp.off, segmentName(cp.seg), segs[i].size)})
		default:
			start = i
			b.rd = cp
			if cp.mark <= cp.off || cp.mark > segs[i].size {
				b.rd.mark = 0 // nothing in flight, or a mark that cannot hold
			}
		}
	}
	// Segments before the read position were fully read; a crash came
	// between the checkpoint and their deletion.
	for _, s := range segs[:start] {
		if err := os.Remove(segmentPath(cfg.Dir, s.num)); err != nil {
			return nil, fmt.Errorf("removing read segment: %w", err)
		}
	}
	b.segs = segs[start:]
	for _, s := range b.segs {
		b.size += s.size
	}
	if n := len(b.segs); n > 0 && b.segs[n-1].size == 0 {
		b.head, err = os.OpenFile(segmentPath(cfg.Dir, b.segs[n-1].num), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("opening head segment: %w", err)
		}
	} else if err := b.newHead(); err != nil {
		return nil, err
	}
	if b.rd.seg != b.segs[0].num { // no usable checkpoint
		b.rd = position{seg: b.segs[0].num}
	}
	if err := writeCheckpoint(cfg.Dir, b.rd, b.syncs()); err != nil {
		b.head.Close()
		return nil, err
	}
	if b.size > b.rd.off {
		b.notEmpty <- struct{}{}
	}
	return b, nil
}

func indexOf(segs []segment, num uint64) int {
	for i, s := range segs {
		if s.num == num {
			return i
		}
	}
	return -1
}

// newHead creates the next segment and makes it the head. The old head, if
// any, must already be synced and closed.
func (b *Buffer) newHead() error {
	num := uint64(1)
	if n := len(b.segs); n > 0 {
		num = b.segs[n-1].num + 1
	}
	f, err := os.OpenFile(segmentPath(b.cfg.Dir, num), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating segment: %w", err)
	}
	if b.syncs() {
		if err := syncDir(b.cfg.Dir); err != nil {
			f.Close()
			return err
		}
	}
	b.head = f
	b.segs = append(b.segs, segment{num: num})
	return nil
}

// rotate seals the head (fsync, close) and starts a new one.
func (b *Buffer) rotate() error {
	if b.syncs() {
		if err := b.head.Sync(); err != nil {
			return fmt.Errorf("syncing segment: %w", err)
		}
	}
	if err := b.head.Close(); err != nil {
		return fmt.Errorf("closing segment: %w", err)
	}
	return b.newHead()
}

// Append adds rec at the end of the buffer. When the size cap is set and
// rec would pass it, the oldest segments are deleted first; dropped is the
// number of unacknowledged records deleted with them (also counted in
// Stats.Dropped). rec is copied; the caller may reuse it.
func (b *Buffer) Append(rec []byte) (dropped int, err error) {
	fl := frameLen(len(rec))
	if fl > b.cfg.MaxSegmentSize {
		return 0, ErrTooLarge
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, ErrClosed
	}
	head := &b.segs[len(b.segs)-1]
	if head.size > 0 && head.size+fl > b.cfg.MaxSegmentSize {
		if err := b.rotate(); err != nil {
			return 0, err
		}
		head = &b.segs[len(b.segs)-1]
	}
	// Validate guarantees MaxSize >= 2*MaxSegmentSize, so the head alone
	// always fits and the loop ends. Records handed out and not yet
	// acknowledged are never dropped: while they are in flight the segment
	// after theirs goes instead. There is one, as segs[0] and the head
	// together fit in the cap.
capLoop:
	for b.cfg.MaxSize > 0 && b.size+fl > b.cfg.MaxSize && len(b.segs) > 1 {
		var n int
		var err error
		switch {
		case b.peekCount == 0:
			n, err = b.dropOldest()
		case len(b.segs) > 2:
			n, err = b.dropSecond()
		default:
			break capLoop // only the segment in flight and the head are left
		}
		dropped += n
		if err != nil {
			return dropped, err
		}
		head = &b.segs[len(b.segs)-1]
	}
	b.frame = appendFrame(b.frame[:0], rec)
	if _, err := b.head.WriteAt(b.frame, head.size); err != nil {
		// Cut off a partial frame so that later appends stay readable.
		_ = b.head.Truncate(head.size)
		return dropped, fmt.Errorf("appending record: %w", err)
	}
	if b.cfg.Sync == SyncAlways {
		if err := b.head.Sync(); err != nil {
			return dropped, fmt.Errorf("syncing segment: %w", err)
		}
	}
	head.size += fl
	b.size += fl
	b.stats.Appended++
	select {
	case b.notEmpty <- struct{}{}:
	default:
	}
	return dropped, nil
}

// dropOldest deletes segs[0], the segment being read, which has no record
// in flight, and returns how many unacknowledged records it held.
func (b *Buffer) dropOldest() (int, error) {
	s := b.segs[0]
	n, err := visitFrames(segmentPath(b.cfg.Dir, s.num), b.rd.off, s.size, b.cfg.OnDrop)
	if err != nil {
		return 0, err
	}
	b.stats.Dropped += uint64(n)
	return n, b.nextSegment()
}

// dropSecond deletes segs[1], the oldest segment after the one being read
// (which holds records in flight), and returns how many records it held.
// The read position is unchanged: reading goes on with segs[2] after
// segs[0].
func (b *Buffer) dropSecond() (int, error) {
	s := b.segs[1]
	n, err := visitFrames(segmentPath(b.cfg.Dir, s.num), 0, s.size, b.cfg.OnDrop)
	if err != nil {
		return 0, err
	}
	if err := os.Remove(segmentPath(b.cfg.Dir, s.num)); err != nil {
		return 0, fmt.Errorf("removing segment: %w", err)
	}
	b.stats.Dropped += uint64(n)
	b.segs = append(b.segs[:1], b.segs[2:]...)
	b.size -= s.size
	return n, nil
}

// nextSegment moves the read position to the start of segs[1], saves it,
// and deletes segs[0]. The checkpoint is written first, so a crash in
// between leaves a segment that Open deletes.
func (b *Buffer) nextSegment() error {
	old := b.segs[0]
	if b.rf != nil {
		b.rf.Close()
		b.rf = nil
	}
	b.peeked, b.peekCount = nil, 0
	b.rd = position{seg: b.segs[1].num}
	b.segs = b.segs[1:]
	b.size -= old.size
	if err := writeCheckpoint(b.cfg.Dir, b.rd, b.cfg.Sync == SyncAlways); err != nil {
		return err
	}
	if err := os.Remove(segmentPath(b.cfg.Dir, old.num)); err != nil {
		return fmt.Errorf("removing segment: %w", err)
	}
	return nil
}

// Peek returns the oldest unacknowledged record, or ErrEmpty. It returns
// the same record until Ack. The caller must not modify it. Corrupt data on
// the way is skipped and counted in Stats; Peek returns an error only for
// I/O failures.
func (b *Buffer) Peek() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.peeked != nil {
		return b.peeked, nil
	}
	for {
		s := b.segs[0]
		if b.rf == nil {
			f, err := os.Open(segmentPath(b.cfg.Dir, s.num))
			if err != nil {
				return nil, fmt.Errorf("opening segment: %w", err)
			}
			b.rf = f
		}
		rec, next, err := readFrame(b.rf, b.rd.off, s.size)
		var reason error
		switch {
		case err == nil:
			b.peeked, b.peekNext, b.peekCount = rec, next, 1
			return rec, nil
		case errors.Is(err, io.EOF):
			if len(b.segs) == 1 {
				return nil, ErrEmpty
			}
		case errors.Is(err, errTorn), errors.Is(err, errBadCRC), errors.Is(err, errBadLen):
			reason = err
		default:
			return nil, err
		}
		if reason != nil {
			b.corrupt(&CorruptError{File: segmentName(s.num), Offset: b.rd.off, Reason: reason.Error()})
			if len(b.segs) == 1 {
				// The head itself is bad: seal it so reading can go on
				// in a new one.
				if err := b.rotate(); err != nil {
					return nil, err
				}
			}
		}
		if err := b.nextSegment(); err != nil {
			return nil, err
		}
	}
}

// PeekNext returns the record after the last one Peek or PeekNext handed
// out, so that a reader may send several records at once. It only reads
// on within the segment of the oldest unacknowledged record, and returns
// ErrEmpty at the end of that segment, at bad data (which the next Peek
// after Ack deals with), when Peek has not been called since the last Ack,
// or when accept (if not nil) refuses the record, which is then not handed
// out. The caller must not modify the record.
func (b *Buffer) PeekNext(accept func(rec []byte) bool) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.peeked == nil || b.rf == nil || b.rd.mark > 0 && b.peekNext >= b.rd.mark {
		return nil, ErrEmpty
	}
	rec, next, err := readFrame(b.rf, b.peekNext, b.segs[0].size)
	switch {
	case err == nil:
		if accept != nil && !accept(rec) {
			return nil, ErrEmpty
		}
		b.peekNext = next
		b.peekCount++
		return rec, nil
	case errors.Is(err, io.EOF), errors.Is(err, errTorn), errors.Is(err, errBadCRC), errors.Is(err, errBadLen):
		return nil, ErrEmpty
	default:
		return nil, err
	}
}

// MarkInFlight saves in the checkpoint that the records handed out since
// the last Ack are about to be sent together, so that after a stop before
// their Ack, [Buffer.Replaying] reports them and PeekNext hands out exactly
// them again, no more, and the caller can send them as they were. A single
// record needs no mark: the first record after Open is always the one that
// may have been in flight. Once marked, PeekNext hands out nothing more
// until Ack.
func (b *Buffer) MarkInFlight() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.peeked == nil {
		return nil
	}
	b.rd.mark = b.peekNext
	return writeCheckpoint(b.cfg.Dir, b.rd, b.cfg.Sync == SyncAlways)
}

// Replaying reports whether the oldest unacknowledged records are marked
// in flight (MarkInFlight): right after Open, the ones that may have
// reached a receiver before the stop. PeekNext then stops at the end of
// them.
func (b *Buffer) Replaying() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rd.mark > b.rd.off
}

// Ack acknowledges every record Peek and PeekNext handed out since the last
// Ack and saves the new read position, so that a reopened buffer does not
// return them again. Without such records it does nothing.
func (b *Buffer) Ack() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.peeked == nil {
		return nil
	}
	b.peeked = nil
	b.rd.off, b.rd.mark = b.peekNext, 0
	b.stats.Acked += uint64(b.peekCount)
	b.peekCount = 0
	if b.rd.off >= b.segs[0].size && len(b.segs) > 1 {
		return b.nextSegment()
	}
	return writeCheckpoint(b.cfg.Dir, b.rd, b.cfg.Sync == SyncAlways)
}

// ForEach calls fn with every unacknowledged record, oldest first, as far
// as they can be read, without moving the read position; for taking stock
// after Open. fn must not call the Buffer nor keep the record.
func (b *Buffer) ForEach(fn func(rec []byte)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	off := b.rd.off
	for _, s := range b.segs {
		if _, err := visitFrames(segmentPath(b.cfg.Dir, s.num), off, s.size, fn); err != nil {
			return err
		}
		off = 0
	}
	return nil
}

// NotEmpty returns a channel that receives a value after Append, for a
// reader that got ErrEmpty to wait on. A value may be stale: Peek again.
func (b *Buffer) NotEmpty() <-chan struct{} { return b.notEmpty }

// Sync fsyncs the head segment, whatever the policy.
func (b *Buffer) Sync() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if err := b.head.Sync(); err != nil {
		return fmt.Errorf("syncing segment: %w", err)
	}
	return nil
}

// Stats returns the buffer's counters and sizes.
func (b *Buffer) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Segments = len(b.segs)
	s.Bytes = b.size
	return s
}

// Close syncs the head segment and the checkpoint and closes the files. A
// peeked record that was not acknowledged is returned again after Open.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.closed = true
	var err error
	if b.syncs() {
		err = b.head.Sync()
	}
	if cerr := b.head.Close(); err == nil {
		err = cerr
	}
	if b.rf != nil {
		b.rf.Close()
	}
	if cerr := writeCheckpoint(b.cfg.Dir, b.rd, b.syncs()); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing buffer: %w", err)
	}
	return nil
}

// syncs reports whether the policy fsyncs at all: at rotation, new files,
// Open and Close.
func (b *Buffer) syncs() bool { return b.cfg.Sync != SyncNever }

// corrupt counts a corrupt file.
func (b *Buffer) corrupt(e *CorruptError) {
	b.stats.Corrupt++
	b.stats.LastCorrupt = e
}
