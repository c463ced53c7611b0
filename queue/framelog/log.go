package framelog

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
		return nil, fmt.Errorf("validating frame log config: %w", err)
	}
	fs := cfg.FS
	if fs == nil {
		fs = osFS{}
	}
	if err := fs.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating frame log directory: %w", err)
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

// Append stores f as a delta against the frame appended before it, or as
// a keyframe starting a new segment (after Open, after a failure, and
// once the deltas since the last keyframe add up to delta_ratio times its
// size). It returns once the frame is written and, with sync "always",
// fsynced. f's slices are not kept; its sets are (they are immutable), to
// compare the next frame against and to hand to a reader that is caught
// up, and so are the labels of its staleness markers (also immutable).
// After an error (a full disk) nothing of f was stored and the next Append
// starts a new segment.
func (l *Log) Append(f *encode.Frame) (err error) {
	if err := checkFrame(f); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	defer func() {
		if err != nil {
			// The frame a caught-up reader would take is no longer the
			// last Append's: it reads the log instead.
			l.mu.Lock()
			l.dropLastLocked()
			l.mu.Unlock()
		}
	}()
	l.mu.Lock()
	closed, seal := l.closed, l.sealHead
	l.sealHead = false
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	key := l.needKey || seal || l.head == nil ||
		float64(l.deltaBytes) >= l.cfg.DeltaRatio*float64(l.keyBytes)
	// Until the frame is stored, a failure leaves the encoder's memory
	// ahead of the log: only a keyframe can follow.
	l.needKey = true
	l.fw = frameWrite{l: l}
	err = l.writeFrame(f, key)
	if errors.Is(err, errNoRoom) {
		// Only the head is left: a keyframe in a new segment lets it go.
		key = true
		err = l.writeFrame(f, true)
	}
	if l.fw.dropped > 0 && l.cfg.OnDrop != nil {
		l.cfg.OnDrop(l.fw.dropped, l.fw.droppedSamples)
	}
	if err != nil {
		return err
	}
	n := l.fw.n
	l.publish(f, n)
	l.needKey = false
	if key {
		l.keyBytes, l.deltaBytes = n, 0
	} else {
		l.deltaBytes += n
	}
	select {
	case l.notEmpty <- struct{}{}:
	default:
	}
	return nil
}

// writeFrame writes f's records at the end of the head, a keyframe in a
// new segment, and with sync "always" fsyncs them. On error it cuts the
// head back to where the frame began, so that the segment stays readable
// up to its last whole frame; a new segment follows anyway.
func (l *Log) writeFrame(f *encode.Frame, key bool) error {
	if key {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	start := l.segs[len(l.segs)-1].size
	l.mu.Unlock()
	l.fw.start, l.fw.n, l.fw.key = start, 0, key
	var err error
	if key {
		if err = l.enc.keyframe(f, &l.fw); err != nil {
			err = fmt.Errorf("writing keyframe: %w", err)
		}
	} else if err = l.enc.delta(f, &l.fw); err != nil {
		err = fmt.Errorf("writing delta: %w", err)
	}
	if err == nil && l.cfg.Sync == SyncAlways {
		if err = l.head.Sync(); err != nil {
			err = fmt.Errorf("syncing segment: %w", err)
		}
	}
	if err != nil {
		_ = l.head.Truncate(start)
		return err
	}
	return nil
}

// errNoRoom stops a delta that the size cap has no room for once only the
// head is left.
var errNoRoom = errors.New("framelog: no room for the delta in the head")

// frameWrite writes the records of one frame at the end of the head as the
// encoder seals them, making room under the size cap for each first.
type frameWrite struct {
	// l is the log written to.
	l *Log
	// start is where the frame begins in the head, n the bytes of it
	// written so far.
	start, n int64
	// key is set for a keyframe: it is written even when the cap has no
	// room for it, since the head (its own segment) is all that is left.
	key bool
	// dropped and droppedSamples count the frames, and their samples,
	// that the size cap deleted before they were handed out, for OnDrop.
	dropped, droppedSamples int
}

func (w *frameWrite) writeRecord(rec []byte) error {
	l := w.l
	n := int64(len(rec))
	l.mu.Lock()
	fits, frames, samples, err := l.makeRoomLocked(w.n + n)
	l.mu.Unlock()
	w.dropped += frames
	w.droppedSamples += samples
	switch {
	case err != nil:
		return err
	case !fits && !w.key:
		return errNoRoom
	}
	if _, err := l.head.WriteAt(rec, w.start+w.n); err != nil {
		return fmt.Errorf("appending record: %w", err)
	}
	w.n += n
	return nil
}

// publish makes the frame just written, n bytes at the end of the head,
// readable, and f the last frame.
func (l *Log) publish(f *encode.Frame, n int64) {
	hdr := l.enc.hdr
	l.mu.Lock()
	defer l.mu.Unlock()
	h := &l.segs[len(l.segs)-1]
	at := h.size
	h.size += n
	h.frames = append(h.frames, frameInfo{end: h.size, samples: hdr.samples})
	l.size += n
	l.publishLocked(pos{seg: h.num, off: at}, pos{seg: h.num, off: h.size}, hdr, f)
	l.stats.Appended++
	if hdr.kind == kindKey {
		l.stats.Keyframes++
	}
}

// publishLocked makes f, just written from at to end, the last frame.
// Copying its objects costs a pointer and a key per object, never per
// series. l.mu must be held.
func (l *Log) publishLocked(at, end pos, hdr header, f *encode.Frame) {
	l.dropLastLocked()
	l.last.ok, l.last.at, l.last.end, l.last.hdr = true, at, end, hdr
	l.last.objs = append(l.last.objs, f.Objects...)
	l.last.stale = append(l.last.stale, f.Stale...)
}

// dropLastLocked forgets the last frame, dropping its
// references to sets and labels. l.mu must be held.
func (l *Log) dropLastLocked() {
	clear(l.last.objs)
	clear(l.last.stale)
	l.last = lastFrame{objs: l.last.objs[:0], stale: l.last.stale[:0]}
}

// rotate seals the head and starts a new, empty one. A head left empty by
// a failed keyframe write is reused.
func (l *Log) rotate() error {
	if l.head != nil {
		l.mu.Lock()
		empty := l.segs[len(l.segs)-1].size == 0
		l.mu.Unlock()
		if empty {
			return nil
		}
		var err error
		if l.syncs() {
			err = l.head.Sync()
		}
		if cerr := l.head.Close(); err == nil {
			err = cerr
		}
		l.head = nil
		if err != nil {
			return fmt.Errorf("sealing segment: %w", err)
		}
	}
	num := l.nextNum
	f, err := l.fs.OpenFile(l.path(num), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating segment: %w", err)
	}
	l.nextNum++
	if l.syncs() {
		if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
			f.Close()
			_ = l.fs.Remove(l.path(num))
			return fmt.Errorf("creating segment: %w", err)
		}
	}
	l.head = f
	l.mu.Lock()
	l.segs = append(l.segs, segment{num: num})
	l.mu.Unlock()
	return nil
}

// makeRoomLocked deletes the oldest segments, never the head, until n more
// bytes fit under the cap, and reports whether they do and what unsent
// frames went. l.mu must be held.
func (l *Log) makeRoomLocked(n int64) (fits bool, frames, samples int, err error) {
	max := l.cfg.MaxBytes
	for max > 0 && l.size+n > max && len(l.segs) > 1 {
		s := l.segs[0]
		for _, r := range s.frames {
			if l.rdPub.before(pos{seg: s.num, off: r.end}) {
				frames++
				samples += r.samples
			}
		}
		if err := l.fs.Remove(l.path(s.num)); err != nil {
			return false, frames, samples, fmt.Errorf("removing segment for the size cap: %w", err)
		}
		l.segs = l.segs[1:]
		l.size -= s.size
	}
	l.stats.DroppedFrames += uint64(frames)
	l.stats.DroppedSamples += uint64(samples)
	return max == 0 || l.size+n <= max, frames, samples, nil
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
		return fmt.Errorf("closing frame log: %w", err)
	}
	return nil
}

// saveLocked writes the checkpoint. l.rmu must be held.
func (l *Log) saveLocked(sync bool) error {
	return writeCheckpoint(l.fs, l.cfg.Dir, checkpoint{acked: l.acked, handed: l.handedEnd}, sync)
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
