package diskbuffer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-state-push/kube-state-push/encode"
)

// segment is one segment file as the log tracks it.
type segment struct {
	// num orders segments; the file is segmentName(num).
	num uint64
	// size is the file's length as far as it is read: whole frames (a
	// frame being written to the head counts once its last record is
	// written).
	size int64
	// frames are its frames' ends and sample counts, for counting what a
	// deletion drops and what is pending without reading the file.
	frames []frameInfo
}

// frameInfo is one frame of a segment.
type frameInfo struct {
	// end is the offset just after the frame's last record.
	end int64
	// samples is the frame's sample count.
	samples int
}

// Log is an on-disk log of frames, each stored as its difference from the
// frame before it. See the package documentation.
type Log struct {
	// cfg is the validated configuration.
	cfg Config
	// fs is cfg.FS or the operating system's.
	fs FS
	// notEmpty gets a token after each Append; capacity 1, never closed.
	notEmpty chan struct{}

	// wmu serializes appends; it guards the fields up to rmu. Taken before
	// mu, never while holding rmu.
	wmu sync.Mutex
	// enc holds the last frame written, for deltas.
	enc *encoder
	// head is the segment appended to; nil until the first Append after
	// Open, or after a failed rotation.
	head File
	// needKey forces the next record to be a keyframe in a new segment:
	// after Open (the last frame written is unknown) and after a failure.
	needKey bool
	// keyBytes is the size of the head's keyframe, deltaBytes of the
	// deltas after it.
	keyBytes, deltaBytes int64
	// nextNum is the number of the next segment to create.
	nextNum uint64
	// fw writes the records of the frame being appended.
	fw frameWrite

	// rmu serializes Next and Ack; it guards the fields up to mu. Taken
	// before mu.
	rmu sync.Mutex
	// dec is the state of the last frame read.
	dec *decoder
	// rd is the next record to read.
	rd pos
	// rf reads segment rfNum; nil when not open.
	rf    File
	rfNum uint64
	// replay is the acknowledged position found at Open: the records of
	// its segment before it are decoded to rebuild the state, not handed
	// out.
	replay pos
	// resentUntil is the end of the last frame handed out before Open:
	// frames up to it are flagged Resent.
	resentUntil pos
	// inflight are the frames handed out and not acknowledged, oldest
	// first.
	inflight []handed
	// acked is the position after the last acknowledged frame, handedEnd
	// after the last handed out; both saved in the checkpoint.
	acked, handedEnd pos
	// free are acknowledged frames kept for reuse.
	free []*encode.Frame
	// rbuf holds the record being read (its body is decompressed into a
	// slice of its own), kept while within keepBytes.
	rbuf []byte

	// mu guards the fields below and the segment files' existence.
	mu sync.Mutex
	// segs are the segment files, oldest first; the last may be the head.
	segs []segment
	// size is the sum of segs[i].size.
	size int64
	// rdPub is the reader's position as the writer sees it: records
	// before it were handed out (or acknowledged before Open), so a
	// deletion does not count them as dropped.
	rdPub pos
	// sealHead asks the writer to start a new segment: the reader found
	// bad data in the head, so the deltas after it would be unreadable.
	sealHead bool
	// last is the frame of the most recent Append, for a reader that
	// is caught up to take without decoding it.
	last lastFrame
	// stats are the counters Stats returns.
	stats Stats
	// closed is set by Close.
	closed bool
}

// lastFrame is the frame the most recent Append wrote, as it was given:
// the sets (shared, they are immutable) and copies of the caller's
// slices.
type lastFrame struct {
	// ok is set from the Append that wrote the frame until the reader
	// takes it, a later Append fails or writes another frame.
	ok bool
	// at is where the frame's first record starts, end where its last
	// ends.
	at, end pos
	// hdr is the frame's header (more not set).
	hdr header
	// objs are the frame's objects; reused, and swapped with the
	// reader's state when it takes them.
	objs []encode.Object
	// stale are the frame's staleness markers; reused.
	stale []encode.Stale
}

// handed is a frame handed out by Next and not yet acknowledged.
type handed struct {
	// end is the position after its last record.
	end pos
	// frame is what Next returned, recycled on Ack.
	frame *encode.Frame
}

// Open opens the log in cfg.Dir, creating the directory if needed. Reading
// resumes after the last acknowledged frame; the first Append starts a new
// segment with a keyframe.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating disk buffer config: %w", err)
	}
	fs := cfg.FS
	if fs == nil {
		fs = osFS{}
	}
	if err := fs.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating disk buffer directory: %w", err)
	}
	// A leftover temp checkpoint was never renamed: the old one holds.
	if err := fs.Remove(filepath.Join(cfg.Dir, checkpointTmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing temporary checkpoint: %w", err)
	}
	all, err := listSegments(fs, cfg.Dir)
	if err != nil {
		return nil, err
	}
	l := &Log{
		cfg: cfg, fs: fs, notEmpty: make(chan struct{}, 1),
		enc: newEncoder(), dec: newDecoder(), needKey: true, nextNum: 1,
	}
	if cfg.partBytes > 0 {
		l.enc.partBytes = cfg.partBytes
	}
	for _, s := range all {
		l.nextNum = s.num + 1
		if s.size == 0 { // created, never written: nothing to read
			if err := fs.Remove(l.path(s.num)); err != nil {
				return nil, fmt.Errorf("removing empty segment: %w", err)
			}
			continue
		}
		if s.frames, err = scanSegment(fs, l.path(s.num), s.size); err != nil {
			return nil, err
		}
		l.segs = append(l.segs, s)
	}

	cp, err := readCheckpoint(fs, cfg.Dir)
	var cerr *CorruptError
	switch {
	case errors.As(err, &cerr):
		l.corrupt(cerr, 0)
	case err != nil && !errors.Is(err, errNoCheckpoint):
		return nil, err
	}
	start := 0
	if err == nil && len(l.segs) > 0 {
		i := l.indexLocked(cp.acked.seg)
		switch {
		case i >= 0 && cp.acked.off <= l.segs[i].size:
			start = i
			l.acked = cp.acked
			if l.acked.before(cp.handed) {
				l.resentUntil = cp.handed
			}
			if cp.acked.off == l.segs[i].size && i < len(l.segs)-1 {
				// Read to the end: nothing to replay there.
				start++
				l.acked = pos{seg: l.segs[start].num}
			}
		case i >= 0 || cp.acked.seg > l.segs[len(l.segs)-1].num:
			l.corrupt(&CorruptError{File: checkpointName, Reason: fmt.Sprintf("points past the end of %s", segmentName(cp.acked.seg))}, 0)
		default:
			// Its segment went to the size cap while the log was open,
			// or was read to the end: start at the next one.
		}
	}
	// Segments before the acknowledged position were read; a crash came
	// between the checkpoint and their deletion.
	for _, s := range l.segs[:start] {
		if err := fs.Remove(l.path(s.num)); err != nil {
			return nil, fmt.Errorf("removing read segment: %w", err)
		}
	}
	l.segs = l.segs[start:]
	for _, s := range l.segs {
		l.size += s.size
	}
	if len(l.segs) > 0 && l.acked.seg != l.segs[0].num {
		l.acked = pos{seg: l.segs[0].num}
	}
	l.handedEnd, l.replay, l.rdPub = l.acked, l.acked, l.acked
	l.rd = pos{seg: l.acked.seg}
	if p := l.pendingLocked(); p > 0 {
		l.notEmpty <- struct{}{}
	}
	return l, nil
}

// scanSegment reads the record headers of a segment, up to the first it
// cannot read, and returns its frames; the reader deals with bad data when
// it gets there.
func scanSegment(fs FS, path string, size int64) ([]frameInfo, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening segment to scan: %w", err)
	}
	defer f.Close()
	var frames []frameInfo
	var off int64
	var hb [maxRecordHeader]byte
	for {
		body, n, _, err := frameAt(f, off, size)
		if err != nil {
			if errors.Is(err, io.EOF) || isCorrupt(err) {
				return frames, nil
			}
			return nil, err
		}
		h := hb[:min(n, maxRecordHeader)]
		if _, err := f.ReadAt(h, body); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading record header: %w", err)
		}
		rh, _, err := parseHeader(h)
		if err != nil {
			return frames, nil
		}
		off = body + n
		if !rh.more {
			frames = append(frames, frameInfo{end: off, samples: rh.samples})
		}
	}
}

// NotEmpty returns a channel that receives a value after Append, for a
// reader that got ErrEmpty to wait on. A value may be stale: call Next.
func (l *Log) NotEmpty() <-chan struct{} { return l.notEmpty }

// Stats returns the log's counters and sizes.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Segments = len(l.segs)
	s.Bytes = l.size
	for _, seg := range l.segs {
		for _, r := range seg.frames {
			if l.rdPub.before(pos{seg: seg.num, off: r.end}) {
				s.PendingFrames++
				s.PendingSamples += r.samples
			}
		}
	}
	return s
}

// pendingLocked is the number of frames not handed out.
func (l *Log) pendingLocked() int {
	n := 0
	for _, seg := range l.segs {
		for _, r := range seg.frames {
			if l.rdPub.before(pos{seg: seg.num, off: r.end}) {
				n++
			}
		}
	}
	return n
}

// Close syncs and closes the files and saves the checkpoint. Frames handed
// out and not acknowledged are handed out again after Open, flagged
// Resent.
func (l *Log) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.rmu.Lock()
	defer l.rmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	var err error
	if l.head != nil {
		if l.syncs() {
			err = l.head.Sync()
		}
		if cerr := l.head.Close(); err == nil {
			err = cerr
		}
	}
	if l.rf != nil {
		l.rf.Close()
	}
	if cerr := l.saveLocked(l.syncs()); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing disk buffer: %w", err)
	}
	return nil
}

// saveLocked writes the checkpoint. l.rmu must be held.
func (l *Log) saveLocked(sync bool) error {
	c := checkpoint{acked: l.acked, handed: l.handedEnd}
	err := writeCheckpoint(l.fs, l.cfg.Dir, c, sync)
	var cerr *CorruptError
	if errors.As(err, &cerr) {
		// A symbolic link where the temporary checkpoint goes, placed while
		// the log was open (Open removes a leftover one): counted, removed
		// (the link, not what it points at), and the checkpoint written.
		l.corrupt(cerr, 0)
		if rerr := l.fs.Remove(filepath.Join(l.cfg.Dir, checkpointTmp)); rerr != nil {
			return fmt.Errorf("removing temporary checkpoint: %w", rerr)
		}
		err = writeCheckpoint(l.fs, l.cfg.Dir, c, sync)
	}
	return err
}

func (l *Log) path(num uint64) string { return filepath.Join(l.cfg.Dir, segmentName(num)) }

// syncs reports whether the policy fsyncs at all.
func (l *Log) syncs() bool { return l.cfg.Sync != SyncNever }

// indexLocked returns the index of segment num in segs, or -1.
func (l *Log) indexLocked(num uint64) int {
	for i, s := range l.segs {
		if s.num == num {
			return i
		}
	}
	return -1
}

// corrupt counts bad data and the frames skipped with it. l.mu must be
// held, or the log not yet shared.
func (l *Log) corrupt(e *CorruptError, frames int) {
	l.stats.Corrupt++
	l.stats.CorruptFrames += uint64(frames)
	l.stats.LastCorrupt = e
}
