package diskbuffer

import (
	"errors"
	"fmt"
	"os"

	"github.com/kube-state-push/kube-state-push/encode"
)

// maxFree is how many acknowledged frames are kept for reuse.
const maxFree = 4

// Next returns the next frame not yet handed out, regenerated in full:
// every object's series with their values, and the staleness markers. It
// may be called several times before Ack (read-ahead); each frame stays
// valid until it is acknowledged, after which its slices are reused.
// Objects come in an order of the log's own, not the writer's. Next
// returns ErrEmpty when every frame was handed out. Bad data on the way is
// skipped and counted in Stats (the rest of its segment with it); Next
// returns other errors only for I/O failures.
//
// A reader that is caught up, whose next frame is the one the most recent
// Append wrote, gets that frame without it being read back: its objects
// are the sets that Append was given, which also become the state later
// deltas are decoded on, so that the reader holds no copy of them.
//
// Next saves in the checkpoint how far it handed out (fsynced with sync
// "always"), so that after a restart exactly the frames in flight are
// flagged Resent; that save is best effort.
func (l *Log) Next() (*encode.Frame, Info, error) {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	for {
		l.mu.Lock()
		size, err := l.locateLocked()
		var fr *encode.Frame
		var lh header
		if err == nil {
			fr, lh = l.takeLastLocked()
		}
		l.mu.Unlock()
		if err != nil {
			return nil, Info{}, err
		}
		if fr != nil {
			if l.rf != nil && l.rfNum != l.rd.seg {
				// A read segment's file, which may be deleted: its
				// space is freed once it is closed.
				l.rf.Close()
				l.rf = nil
			}
			fr.Objects = append(fr.Objects[:0], l.dec.objs...)
			return l.handOut(fr, lh)
		}
		if l.rf == nil || l.rfNum != l.rd.seg {
			if l.rf != nil {
				l.rf.Close()
				l.rf = nil
			}
			f, err := l.fs.OpenFile(l.path(l.rd.seg), os.O_RDONLY, 0)
			if errors.Is(err, ErrSymlink) {
				// Replaced by a link since it was listed: its frames are
				// lost, as a corrupt segment's are.
				l.skipSegment(size, ErrSymlink)
				continue
			}
			if err != nil {
				return nil, Info{}, fmt.Errorf("opening segment: %w", err)
			}
			l.rf, l.rfNum = f, l.rd.seg
		}
		rec, next, err := readFrame(l.rf, l.rd.off, size, l.rbuf)
		if cap(rec) > cap(l.rbuf) {
			l.rbuf = rec[:0]
		}
		var h header
		var body []byte
		if err == nil {
			h, body, err = splitRecord(rec)
		}
		if cap(l.rbuf) > keepBytes {
			l.rbuf = nil // a record of the first format, or bad data
		}
		if err == nil && h.more && next >= size {
			// A segment ends with a frame's last record, unless a crash
			// cut the frame off (the head's size counts whole frames).
			err = errCutFrame
		}
		replaying := l.rd.seg == l.replay.seg && next <= l.replay.off
		last := err == nil && !h.more
		if err == nil {
			if last && !replaying {
				fr = l.frame()
			}
			err = l.dec.apply(h, body, fr)
		}
		if err != nil {
			if !isCorrupt(err) {
				return nil, Info{}, err
			}
			if fr != nil {
				l.recycle(fr)
			}
			l.skipSegment(size, err)
			continue
		}
		l.rd.off = next
		if !last || replaying {
			continue
		}
		return l.handOut(fr, h)
	}
}

// takeLastLocked returns the frame at the read position without reading
// it, and moves past it, if it is the last frame and the reader's state
// is the one it applies to: the frame is a keyframe, or the state is that
// of the frame before it (the only way to reach a delta with a valid
// state), and no frame's records are being decoded (which would make the
// frame at the read position bad data). Otherwise it returns nil. l.rmu
// and l.mu must be held.
func (l *Log) takeLastLocked() (*encode.Frame, header) {
	last := &l.last
	if !last.ok || last.at != l.rd || l.dec.open || last.hdr.kind != kindKey && !l.dec.valid ||
		l.rd.seg == l.replay.seg && last.end.off <= l.replay.off {
		return nil, header{}
	}
	fr := l.frame()
	fr.Timestamp = last.hdr.ts
	fr.Stale = append(fr.Stale[:0], last.stale...)
	last.objs = l.dec.adopt(last.objs)
	h := last.hdr
	l.rd = last.end
	l.dropLastLocked()
	return fr, h
}

// handOut records fr, the frame of record h ending at the read position,
// as handed out, and returns it. l.rmu must be held.
func (l *Log) handOut(fr *encode.Frame, h header) (*encode.Frame, Info, error) {
	end := l.rd
	l.inflight = append(l.inflight, handed{end: end, frame: fr})
	l.handedEnd = end
	l.mu.Lock()
	l.rdPub = end
	l.stats.InFlight = len(l.inflight)
	l.mu.Unlock()
	_ = l.saveLocked(l.cfg.Sync == SyncAlways)
	return fr, Info{
		Samples:  h.samples,
		Resent:   !l.resentUntil.before(end),
		Keyframe: h.kind == kindKey,
	}, nil
}

// locateLocked moves the read position to the next readable record and
// returns its segment's size, or ErrEmpty. l.rmu and l.mu must be held.
func (l *Log) locateLocked() (int64, error) {
	if l.closed {
		return 0, ErrClosed
	}
	for {
		i := l.indexLocked(l.rd.seg)
		if i < 0 {
			// Not created yet, deleted by the size cap, or read: go on
			// with the oldest segment after it.
			j := l.afterLocked(l.rd.seg)
			if j == len(l.segs) {
				return 0, ErrEmpty
			}
			l.moveLocked(l.segs[j].num)
			continue
		}
		s := l.segs[i]
		if l.rd.off < s.size {
			return s.size, nil
		}
		if i == len(l.segs)-1 {
			return 0, ErrEmpty // the head: more may come
		}
		l.moveLocked(l.segs[i+1].num)
		if len(l.inflight) == 0 {
			// Best effort: a segment left behind is removed by the next
			// Ack, which reports the error.
			_ = l.settleLocked()
		}
	}
}

// moveLocked starts reading segment num from its keyframe.
func (l *Log) moveLocked(num uint64) {
	l.rd = pos{seg: num}
	l.dec.reset()
	if l.rdPub.before(l.rd) {
		l.rdPub = l.rd
	}
}

// skipSegment counts bad data at the read position and skips the rest of
// the segment: its deltas apply to a state now unknown.
func (l *Log) skipSegment(size int64, reason error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	frames := 0
	from := l.rd.off
	if l.rd.seg == l.replay.seg {
		from = max(from, l.replay.off) // acknowledged before Open: not lost
	}
	if i := l.indexLocked(l.rd.seg); i >= 0 {
		for _, r := range l.segs[i].frames {
			if r.end > from && r.end <= size {
				frames++
			}
		}
		if i == len(l.segs)-1 {
			l.sealHead = true
		}
	}
	l.corrupt(&CorruptError{File: segmentName(l.rd.seg), Offset: l.rd.off, Reason: reason.Error()}, max(frames, 1))
	l.rd.off = size
	l.dec.reset()
	if p := (pos{seg: l.rd.seg, off: size}); l.rdPub.before(p) {
		l.rdPub = p
	}
}

// Ack acknowledges the oldest frame handed out and not yet acknowledged:
// it was delivered. The read position saved in the checkpoint moves past
// it, and segments read to the end are deleted. The frame's slices may be
// reused from then on. Without such a frame Ack does nothing.
func (l *Log) Ack() error {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if len(l.inflight) == 0 {
		l.mu.Unlock()
		return nil
	}
	h := l.inflight[0]
	l.inflight[0] = handed{}
	l.inflight = l.inflight[1:]
	if len(l.inflight) == 0 {
		l.inflight = l.inflight[:0:0]
	}
	l.acked = h.end
	l.stats.Acked++
	l.stats.InFlight = len(l.inflight)
	err := l.settleLocked()
	l.mu.Unlock()
	l.recycle(h.frame)
	if serr := l.saveLocked(l.cfg.Sync == SyncAlways); err == nil {
		err = serr
	}
	return err
}

// settleLocked moves the acknowledged position past the ends of sealed
// segments and deletes the segments before it. l.rmu and l.mu must be
// held.
func (l *Log) settleLocked() error {
	for {
		i := l.indexLocked(l.acked.seg)
		if i < 0 {
			// Deleted by the size cap: resume at the next one.
			j := l.afterLocked(l.acked.seg)
			if j == len(l.segs) {
				break
			}
			l.acked = pos{seg: l.segs[j].num}
			continue
		}
		if l.acked.off < l.segs[i].size || i == len(l.segs)-1 || l.rd.seg == l.acked.seg {
			break
		}
		l.acked = pos{seg: l.segs[i+1].num}
	}
	for len(l.segs) > 0 && l.segs[0].num < l.acked.seg {
		s := l.segs[0]
		if err := l.fs.Remove(l.path(s.num)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing read segment: %w", err)
		}
		l.segs = l.segs[1:]
		l.size -= s.size
	}
	return nil
}

// frame returns a frame to fill: a recycled one, or a new one.
func (l *Log) frame() *encode.Frame {
	if n := len(l.free); n > 0 {
		f := l.free[n-1]
		l.free = l.free[:n-1]
		return f
	}
	return new(encode.Frame)
}

// recycle keeps an acknowledged frame's slices for a later Next.
func (l *Log) recycle(f *encode.Frame) {
	if f == nil || len(l.free) >= maxFree {
		return
	}
	f.Reset()
	l.free = append(l.free, f)
}

// afterLocked is the index of the oldest segment numbered after num, or
// len(l.segs) when there is none. l.mu must be held.
func (l *Log) afterLocked(num uint64) int {
	j := 0
	for j < len(l.segs) && l.segs[j].num <= num {
		j++
	}
	return j
}
