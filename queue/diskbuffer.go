package queue

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
)

// The disk buffer of an endpoint (disk_buffer.directory) holds its frames
// in the format of package diskbuffer, next to the directory's lock:
//
//	<directory>/lock
//	<directory>/frames/00000001.seg ... checkpoint
//
// The feed writes every frame to the buffer whole (writeFrame): a
// snapshot is stored as its difference from the one before, on top of a
// keyframe per segment, and fsynced, so it counts as queued once it is on
// stable storage, and an outage of hours costs megabytes, not gigabytes.
// The feed then reads the frames back in order (nextFrame), hands their
// samples to the shards like any other (appendItems), and says so
// (framePushed): the endpoint marks how far each shard had been given
// samples then, and acknowledges the frame in the log once every shard has
// settled that far (accepted, or dropped and counted). So a restarted
// agent resends at most the frames in flight, flagged as resent, and
// nothing the shards hold is lost at a stop: it is still in the log.
//
// With a disk buffer, a shard never gives up on a batch: once max_retry_
// duration passes it keeps the batch and tries again after a pause
// (max_backoff), and at the stop deadline it stops without counting a drop.
// What stays unsent is in the log for the next start.

// framesDir is the log's directory under disk_buffer.directory.
const framesDir = "frames"

// diskState is an endpoint's disk buffer.
type diskState struct {
	// dir is disk_buffer.directory.
	dir string
	// lock holds the directory's lock while the endpoint has it.
	lock *os.File
	log  *diskbuffer.Log

	// mu guards inflight, inflightSamples and reported.
	mu sync.Mutex
	// inflight are the frames handed to the shards and not yet
	// acknowledged, oldest first.
	inflight []pushedFrame
	// inflightSamples is the sum of their samples.
	inflightSamples int
	// live holds, by timestamp, the marks of the snapshots sent ahead of
	// the backlog (backfill: newest_first), whose stored copies are then
	// acknowledged without being sent again.
	live map[int64]mark
	// progress gets a token each time a shard has settled a batch.
	progress chan struct{}
	// reported is what was last added to the endpoint's gauges and
	// corrupt counter (report).
	reported reportedStats
}

// pushedFrame is a frame whose samples the shards were given.
type pushedFrame struct {
	// mark tells when every shard has settled them.
	mark mark
	// samples is the frame's sample count.
	samples int
}

// reportedStats are the log's figures as last reported.
type reportedStats struct {
	bytes, queued int64
	segments      int
	corrupt       uint64
}

// mark is how far each shard of a generation had been given samples; it is
// settled once each shard has settled that far. A generation that takes
// over from another sends nothing before the other has finished, so a mark
// of the newest generation covers what went to older ones too.
type mark struct {
	shards []*shard
	counts []int64
}

// settled reports whether every shard has settled its samples up to the
// mark.
func (m *mark) settled() bool {
	for i, l := range m.shards {
		if l.settled.Load() < m.counts[i] {
			return false
		}
	}
	return true
}

// queued is the samples of the frames not yet acknowledged, as last
// reported.
func (d *diskState) queued() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reported.queued
}

// openDisk locks the endpoint's buffer directory and opens the buffer.
func (e *Endpoint) openDisk(fs diskbuffer.FS) (err error) {
	dc := e.cfg.DiskBuffer
	d := &diskState{dir: dc.Directory, progress: make(chan struct{}, 1)}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return fmt.Errorf("creating disk buffer directory: %w", err)
	}
	if d.lock, err = lockDir(d.dir); err != nil {
		return err
	}
	fc := diskbuffer.DefaultConfig
	fc.Dir = filepath.Join(d.dir, framesDir)
	fc.MaxBytes = dc.MaxBytes
	fc.OnDrop = e.droppedFrames
	fc.FS = fs
	if d.log, err = diskbuffer.Open(fc); err != nil {
		d.lock.Close()
		return fmt.Errorf("opening the disk buffer: %w", err)
	}
	e.disk = d
	if st := d.log.Stats(); st.PendingFrames > 0 {
		e.log.Info("resuming the disk buffer", "dir", d.dir, "frames", st.PendingFrames, "samples", st.PendingSamples, "bytes", st.Bytes)
	}
	e.reportDisk()
	return nil
}

// writeFrame stores a snapshot in the disk buffer; once it returns nil the
// frame is on stable storage. A frame that cannot be written is counted as
// dropped (buffer_error); a later one is written again (a full disk that
// frees up). Only the feed calls it.
func (e *Endpoint) writeFrame(f *encode.Frame) error {
	err := e.disk.log.Append(f)
	if err == nil {
		// The newest snapshot queued is the newest written, however far
		// behind the shards are: the resharding loop sees the backlog on
		// disk as a delay, and grows the shards to catch up.
		storeMax(&e.load.highestIn, f.Timestamp)
	}
	if err != nil {
		n := f.Samples()
		e.metrics.dropped[ReasonBufferError].Add(float64(n))
		e.load.dropped.Add(int64(n))
		e.drops.log(e.log, ReasonBufferError, n, fmt.Errorf("writing a snapshot to the disk buffer: %w", err))
	}
	e.reportDisk()
	return err
}

// nextFrame returns the oldest frame of the disk buffer not yet handed out,
// in full, and whether it may have been delivered before a restart; its
// sets stay valid until the endpoint has acknowledged it. It returns
// diskbuffer.ErrEmpty when every frame written was handed out: frameReady
// then tells when to try again. Only the feed calls it.
func (e *Endpoint) nextFrame() (*encode.Frame, diskbuffer.Info, error) {
	f, info, err := e.disk.log.Next()
	if err != nil && !errors.Is(err, diskbuffer.ErrEmpty) {
		e.drops.log(e.log, ReasonBufferError, 0, fmt.Errorf("reading the disk buffer (trying again): %w", err))
	}
	if err == nil && info.Resent {
		// Every sample appended from now on is a resend, until framePushed
		// knows how far each shard got.
		for _, l := range e.cur.shards {
			l.resendUntil.Store(math.MaxInt64)
		}
	}
	e.reportDisk()
	return f, info, err
}

// frameReady receives a value after writeFrame, for a feed that got
// diskbuffer.ErrEmpty. A value may be stale: call nextFrame again.
func (e *Endpoint) frameReady() <-chan struct{} { return e.disk.log.NotEmpty() }

// framePushed says that every sample of f, the frame nextFrame returned
// last, has been appended (and flushed), or that f was sent ahead of the
// backlog already (sentLive): the frame is acknowledged in the disk buffer
// once the shards have settled them all. With info.Resent, the shards send
// those samples as resent. Only the feed calls it.
func (e *Endpoint) framePushed(f *encode.Frame, info diskbuffer.Info) {
	d := e.disk
	d.mu.Lock()
	m, sentLive := d.live[f.Timestamp]
	// Snapshots sent ahead and older than this one were dropped from the
	// buffer by its size cap: their marks are no longer needed.
	for ts := range d.live {
		if ts <= f.Timestamp {
			delete(d.live, ts)
		}
	}
	d.mu.Unlock()
	if !sentLive {
		m = e.mark()
	}
	if info.Resent {
		for i, l := range m.shards {
			l.resendUntil.Store(m.counts[i]) // from nextFrame's "all"
		}
	}
	d.mu.Lock()
	d.inflight = append(d.inflight, pushedFrame{mark: m, samples: info.Samples})
	d.inflightSamples += info.Samples
	d.mu.Unlock()
	e.ackSettled()
}

// mark is how far the shards have been given samples now.
func (e *Endpoint) mark() mark {
	shards := e.cur.shards
	m := mark{shards: shards, counts: make([]int64, len(shards))}
	for i, l := range shards {
		m.counts[i] = l.appended.Load()
	}
	return m
}

// behind reports whether the disk buffer holds snapshots older than the
// newest one written that have not been handed out: a backlog.
func (e *Endpoint) behind() bool { return e.disk.log.Stats().PendingFrames > 1 }

// pushedLive says that every sample of f, a snapshot just written, has
// been appended (and flushed) ahead of the backlog: when nextFrame returns
// its stored copy, sentLive tells, and framePushed acknowledges it once
// these samples are settled. Only the feed calls it.
func (e *Endpoint) pushedLive(f *encode.Frame) {
	m := e.mark()
	d := e.disk
	d.mu.Lock()
	if d.live == nil {
		d.live = map[int64]mark{}
	}
	d.live[f.Timestamp] = m
	d.mu.Unlock()
}

// sentLive reports whether f, a frame nextFrame returned, was sent ahead of
// the backlog already (pushedLive), so that it is not sent again.
func (e *Endpoint) sentLive(f *encode.Frame) bool {
	d := e.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.live[f.Timestamp]
	return ok
}

// inFlight is the number of snapshots handed to the shards whose samples are
// not all settled yet: the feed hands over the next stored one only
// below a small limit, so that a backlog stays on disk (where it costs
// little, and a restart finds it) rather than in the shards, and a snapshot
// sent ahead of it (backfill: newest_first) waits behind at most that
// many.
func (e *Endpoint) inFlight() int {
	d := e.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for i := range d.inflight {
		if !d.inflight[i].mark.settled() {
			n++
		}
	}
	for _, m := range d.live {
		if !m.settled() {
			n++
		}
	}
	return n
}

// progress receives a value after a shard has settled a batch, for a
// feed waiting on inFlight. A value may be stale.
func (e *Endpoint) progress() <-chan struct{} { return e.disk.progress }

// ackSettled acknowledges, oldest first, the frames whose samples every
// shard has settled. Shards call it after each batch.
func (e *Endpoint) ackSettled() {
	d := e.disk
	d.mu.Lock()
	acked := 0
	for len(d.inflight) > 0 && d.inflight[0].mark.settled() {
		if err := d.log.Ack(); err != nil {
			// Delivered; a restart would send it again, nothing more.
			e.log.Error("acknowledging a delivered snapshot in the disk buffer", "err", err)
		}
		d.inflightSamples -= d.inflight[0].samples
		d.inflight[0] = pushedFrame{}
		d.inflight = d.inflight[1:]
		acked++
	}
	if len(d.inflight) == 0 {
		d.inflight = d.inflight[:0:0] // let the backing array go
	}
	d.mu.Unlock()
	signal(d.progress)
	if acked > 0 {
		e.reportDisk()
	}
}

// droppedFrames counts what the size cap deleted before it was sent
// (diskbuffer.Config.OnDrop).
func (e *Endpoint) droppedFrames(frames, samples int) {
	e.metrics.dropped[ReasonBufferFull].Add(float64(samples))
	e.load.dropped.Add(int64(samples))
	e.drops.log(e.log, ReasonBufferFull, samples, fmt.Errorf("disk_buffer.max_bytes %d reached: dropping the oldest %d snapshots", e.cfg.DiskBuffer.MaxBytes, frames))
}

// reportDisk brings the disk buffer gauges (bytes, segments,
// queue_length: the samples of the frames not yet acknowledged) and the
// corrupt counter up to date with the log.
func (e *Endpoint) reportDisk() {
	d := e.disk
	st := d.log.Stats()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := reportedStats{bytes: st.Bytes, segments: st.Segments, queued: int64(st.PendingSamples + d.inflightSamples), corrupt: st.Corrupt}
	e.metrics.buf.bytes.Add(float64(now.bytes - d.reported.bytes))
	e.metrics.buf.segments.Add(float64(now.segments - d.reported.segments))
	e.metrics.queueLength.Add(float64(now.queued - d.reported.queued))
	if n := now.corrupt - d.reported.corrupt; n > 0 {
		e.metrics.buf.corrupt.Add(float64(n))
		e.log.Warn("skipped corrupt data in the disk buffer", "count", n, "last", st.LastCorrupt)
	}
	d.reported = now
}

// closeDisk closes the log (its read position is saved) and releases the
// directory, taking what stays there out of the gauges: the next endpoint
// on the directory (a reload's handover, which shares them) counts it
// again when it opens the log.
func (e *Endpoint) closeDisk() {
	d := e.disk
	if d == nil {
		return
	}
	d.mu.Lock()
	e.metrics.buf.bytes.Sub(float64(d.reported.bytes))
	e.metrics.buf.segments.Sub(float64(d.reported.segments))
	e.metrics.queueLength.Sub(float64(d.reported.queued))
	d.reported = reportedStats{corrupt: d.reported.corrupt}
	d.mu.Unlock()
	if err := d.log.Close(); err != nil && !errors.Is(err, diskbuffer.ErrClosed) {
		e.log.Error("closing the disk buffer", "err", err)
	}
	if err := d.lock.Close(); err != nil {
		e.log.Error("unlocking the disk buffer directory", "err", err)
	}
}

// pause waits about max_backoff before a shard tries a kept batch again,
// and reports whether it may (false once the send context has ended).
func (e *Endpoint) pause() bool {
	d := e.cfg.QueueConfig.MaxBackoff
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.sendCtx.Done():
		return false
	}
}
