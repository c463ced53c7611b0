package diskbuffer

import (
	"errors"
	"fmt"
	"os"

	"github.com/kube-state-push/kube-state-push/encode"
)

// The write side of the log: Append encodes a frame into records written
// to the head segment, rotating to a new segment for a keyframe and making
// room under the size cap first, and publishes it to the reader.

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
var errNoRoom = errors.New("diskbuffer: no room for the delta in the head")

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
	limit := l.cfg.MaxBytes
	for limit > 0 && l.size+n > limit && len(l.segs) > 1 {
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
	return limit == 0 || l.size+n <= limit, frames, samples, nil
}
