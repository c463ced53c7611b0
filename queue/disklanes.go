package queue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuf"
)

// The disk buffer of an endpoint (disk_buffer.directory) is one diskbuf
// FIFO per shard, grouped by generation (lanes.go):
//
//	<directory>/lock
//	<directory>/g00000003-2/lane-000/00000001.seg ... checkpoint
//	<directory>/g00000003-2/lane-001/...
//
// A generation directory is named by its number and its shard count. Append
// writes each shard's samples as records (record.go) of at most
// max_samples_per_send before it returns, so whatever Append queued
// survives a killed process. Each lane sends from its FIFO and acknowledges
// a batch only after its final answer (accepted, or dropped and counted),
// so a restarted agent resends at most the batch each lane had in flight.
// A batch whose retries outlast max_retry_duration stays in the buffer and
// is tried again; nothing waits on the receiver but the lane itself.
//
// At start the generations found are resumed oldest first: the newest one
// keeps taking samples when its shard count is within min_shards and
// max_shards, and older ones drain before it sends.

const (
	// minLaneSegment and maxLaneSegment bound a lane's segment size: a
	// quarter of its share of max_bytes.
	minLaneSegment = 64 << 10
	maxLaneSegment = 8 << 20
)

// diskState is an endpoint's disk buffer directory.
type diskState struct {
	// dir is disk_buffer.directory.
	dir string
	// lock holds the directory's lock while the endpoint runs.
	lock *os.File
	// maxBytes is disk_buffer.max_bytes, shared evenly by the lanes of a
	// generation.
	maxBytes int64
	// next is the number of the next generation directory; used by New
	// and then only by the producer.
	next uint64
	// pending counts the samples in the buffer: appended or found at
	// start, and not yet acknowledged or dropped.
	pending atomic.Int64
}

// genDirName is the directory name of generation num with n lanes.
func genDirName(num uint64, n int) string { return fmt.Sprintf("g%08d-%d", num, n) }

// parseGenDir returns the number and lane count of a generation directory
// name.
func parseGenDir(name string) (num uint64, n int, ok bool) {
	rest, found := strings.CutPrefix(name, "g")
	numS, nS, found2 := strings.Cut(rest, "-")
	if !found || !found2 {
		return 0, 0, false
	}
	num, err1 := strconv.ParseUint(numS, 10, 64)
	n, err2 := strconv.Atoi(nS)
	return num, n, err1 == nil && err2 == nil && num > 0 && n > 0
}

// laneDirName is the directory name of lane i.
func laneDirName(i int) string { return fmt.Sprintf("lane-%03d", i) }

// laneSizes returns the size cap and segment size of one of n lanes
// sharing maxBytes.
func laneSizes(maxBytes int64, n int) (capBytes, segment int64) {
	share := maxBytes / int64(n)
	segment = min(max(share/4, minLaneSegment), maxLaneSegment)
	return max(share, 2*segment), segment
}

// openDisk opens and locks the endpoint's buffer directory and resumes the
// generations in it (see the top of this file); it sets e.disk and returns
// the live generations, oldest first, the last taking new samples.
func (e *Endpoint) openDisk() (gens []*generation, err error) {
	dc, q := e.cfg.DiskBuffer, e.cfg.QueueConfig
	d := &diskState{dir: dc.Directory, maxBytes: dc.MaxBytes, next: 1}
	// Directories 0700 and files 0600 (here and in package diskbuf): the
	// buffer holds the cluster's labels and annotations, for the agent
	// alone.
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating disk buffer directory: %w", err)
	}
	if d.lock, err = lockDir(d.dir); err != nil {
		return nil, err
	}
	e.disk = d
	defer func() {
		if err != nil {
			for _, g := range gens {
				e.closeLanes(g)
			}
			e.forgetPending() // what openLanes counted so far
			d.lock.Close()
			e.disk = nil
		}
	}()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("listing disk buffer directory: %w", err)
	}
	var found []*generation
	for _, ent := range ents {
		num, n, ok := parseGenDir(ent.Name())
		if !ok || !ent.IsDir() {
			continue
		}
		g := &generation{num: num, dir: filepath.Join(d.dir, ent.Name()), done: make(chan struct{})}
		found = append(found, g) // before opening: closed on error
		if err := d.openLanes(e, g, n); err != nil {
			return found, err
		}
		d.next = max(d.next, num+1)
	}
	slices.SortFunc(found, func(a, b *generation) int { return compareUint(a.num, b.num) })

	// The newest generation keeps taking samples if its shard count is
	// allowed; otherwise a new one starts with the nearest allowed count.
	var cur *generation
	if k := len(found); k > 0 && len(found[k-1].lanes) >= q.MinShards && len(found[k-1].lanes) <= q.MaxShards {
		cur, found = found[k-1], found[:k-1]
	}
	for _, g := range found {
		if !slices.ContainsFunc(g.lanes, func(l *lane) bool { return l.resend }) {
			e.closeLanes(g)
			if err := os.RemoveAll(g.dir); err != nil {
				return gens, fmt.Errorf("removing an empty disk buffer generation: %w", err)
			}
			continue
		}
		g.superseded.Store(true)
		for _, l := range g.lanes {
			l.flushNow() // send what it holds, then exit
		}
		gens = append(gens, g)
	}
	if cur == nil {
		n := q.MinShards
		if k := len(gens); k > 0 {
			n = min(max(len(gens[k-1].lanes), q.MinShards), q.MaxShards)
		}
		if cur, err = d.create(e, n, nil); err != nil {
			return gens, err
		}
	}
	gens = append(gens, cur)
	for i := 1; i < len(gens); i++ {
		gens[i].prevDone = gens[i-1].done
	}
	if len(gens) > 1 || d.pending.Load() > 0 {
		e.log.Info("resuming the disk buffer", "dir", d.dir, "samples", d.pending.Load(), "generations", len(gens), "shards", len(cur.lanes))
	}
	return gens, nil
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// create makes a new generation of n empty lanes whose sending waits for
// prevDone.
func (d *diskState) create(e *Endpoint, n int, prevDone <-chan struct{}) (*generation, error) {
	num := d.next
	d.next++
	g := &generation{num: num, dir: filepath.Join(d.dir, genDirName(num, n)), prevDone: prevDone, done: make(chan struct{})}
	if err := d.openLanes(e, g, n); err != nil {
		e.closeLanes(g)
		return nil, err
	}
	return g, nil
}

// openLanes opens g's n lane buffers, creating them if needed, and takes
// stock of what they hold.
func (d *diskState) openLanes(e *Endpoint, g *generation, n int) error {
	capBytes, segment := laneSizes(d.maxBytes, n)
	for i := range n {
		cfg := diskbuf.DefaultConfig
		cfg.Dir = filepath.Join(g.dir, laneDirName(i))
		cfg.MaxSize, cfg.MaxSegmentSize = capBytes, segment
		cfg.OnDrop = e.droppedRecord
		b, err := diskbuf.Open(cfg)
		if err != nil {
			return fmt.Errorf("opening disk buffer %s: %w", cfg.Dir, err)
		}
		l := &lane{buf: b, flush: make(chan struct{})}
		g.lanes = append(g.lanes, l)
		records, samples := 0, 0
		err = b.ForEach(func(rec []byte) {
			records++
			if k, err := recordSamples(rec); err == nil {
				samples += k
			}
		})
		if err != nil {
			return fmt.Errorf("reading disk buffer %s: %w", cfg.Dir, err)
		}
		l.resend = records > 0
		d.pending.Add(int64(samples))
		e.metrics.queueLength.Add(float64(samples))
		e.reportBuffer(l)
	}
	return nil
}

// forgetPending takes the samples still in the buffer out of the
// queue_length gauge, once the endpoint lets go of the directory, so that
// the next endpoint on it counts them once.
func (e *Endpoint) forgetPending() {
	if n := e.disk.pending.Swap(0); n != 0 {
		e.metrics.queueLength.Sub(float64(n))
	}
}

// closeLanes closes the buffers of g's lanes, for generations that never
// started.
func (e *Endpoint) closeLanes(g *generation) {
	for _, l := range g.lanes {
		e.closeLane(l)
	}
}

// droppedRecord counts a record the size cap deleted (diskbuf.Config.OnDrop).
func (e *Endpoint) droppedRecord(rec []byte) {
	n, err := recordSamples(rec)
	if err != nil {
		e.metrics.buf.corrupt.Inc()
		return
	}
	e.metrics.dropped[ReasonBufferFull].Add(float64(n))
	e.metrics.queueLength.Sub(float64(n))
	e.disk.pending.Add(-int64(n))
	e.load.dropped.Add(int64(n))
	e.drops.log(e.log, ReasonBufferFull, n, fmt.Errorf("disk_buffer.max_bytes %d reached: dropping the oldest batches", e.disk.maxBytes))
}

// appendDisk writes samples to l's buffer as records of at most
// max_samples_per_send and returns how many were written.
func (e *Endpoint) appendDisk(l *lane, samples []encode.Sample) int {
	written := 0
	for len(samples) > 0 {
		k := min(len(samples), e.cfg.QueueConfig.MaxSamplesPerSend)
		written += e.writeRecord(l, samples[:k])
		samples = samples[k:]
	}
	l.dirty = true
	e.reportBuffer(l)
	return written
}

// writeRecord writes samples as one record, or as two halves when the
// record would not fit in a segment; it returns how many were written.
func (e *Endpoint) writeRecord(l *lane, samples []encode.Sample) int {
	_, err := l.buf.Append(e.rec.encode(samples))
	switch {
	case err == nil:
		n := len(samples)
		e.disk.pending.Add(int64(n))
		e.metrics.queueLength.Add(float64(n))
		return n
	case errors.Is(err, diskbuf.ErrTooLarge) && len(samples) > 1:
		mid := len(samples) / 2
		return e.writeRecord(l, samples[:mid]) + e.writeRecord(l, samples[mid:])
	}
	e.metrics.dropped[ReasonBufferError].Add(float64(len(samples)))
	e.load.dropped.Add(int64(len(samples)))
	e.drops.log(e.log, ReasonBufferError, len(samples), fmt.Errorf("writing to the disk buffer: %w", err))
	return 0
}

// runDiskLane sends l's batches from its buffer, oldest first, until it is
// flushed and empty or the send context ends; what is left stays on disk.
func (e *Endpoint) runDiskLane(g *generation, l *lane) {
	defer e.closeLane(l)
	if !e.waitPrev(g) {
		return
	}
	var (
		batch    = make([]encode.Sample, 0, e.cfg.QueueConfig.MaxSamplesPerSend)
		scratch  [][]byte // decompressed records; the batch's labels point into them
		flush    = l.flush
		flushing bool
	)
	for {
		rec, err := l.buf.Peek()
		switch {
		case errors.Is(err, diskbuf.ErrEmpty):
			e.reportBuffer(l)
			if flushing {
				l.drained = true
				return
			}
			select {
			case <-l.buf.NotEmpty():
			case <-flush:
				flushing, flush = true, nil
			case <-e.sendCtx.Done():
				return
			}
			continue
		case err != nil:
			e.drops.log(e.log, ReasonBufferError, 0, fmt.Errorf("reading the disk buffer (trying again): %w", err))
			if !e.pause() {
				return
			}
			continue
		}
		var stored []byte
		batch, stored, err = e.readBatch(l, rec, batch[:0], &scratch)
		if err != nil {
			// A record with a good checksum that does not decode: written
			// by another version, or a bug. Skip it, counted.
			e.metrics.buf.corrupt.Inc()
			e.log.Error("skipping a disk buffer record that does not decode", "err", err)
			if err := l.buf.Ack(); err != nil {
				e.log.Error("acknowledging a disk buffer record", "err", err)
			}
			continue
		}
		for send := batch; ; {
			var o outcome
			o, send = e.sendBatch(l, send, delivery{keep: true, resent: l.resend}, stored)
			if o == delivered {
				break
			}
			if len(send) < len(batch) {
				stored = nil // no longer the request of what is left
			}
			if o == stopped || !e.pause() {
				return // the batch stays on disk for the next start
			}
		}
		if err := l.buf.Ack(); err != nil {
			// Sent, but the checkpoint did not move: a restart would send it
			// again, nothing more.
			e.log.Error("acknowledging a sent batch in the disk buffer", "err", err)
		}
		n := len(batch)
		e.disk.pending.Add(-int64(n))
		e.metrics.queueLength.Sub(float64(n))
		l.resend = false
		clear(batch) // drop label references
		e.reportBuffer(l)
	}
}

// readBatch decodes rec, the oldest record of l, into batch and adds the
// records after it in the same segment while the batch stays within
// max_samples_per_send, marking a batch of several records in flight. A
// lane's first batch after a restart is what may have been in flight at
// the stop: the marked records, or else the first record alone.
// scratch holds the decompressed records the samples point into. When the
// batch is rec alone, stored is rec's compressed 1.0 request, which a 1.0
// endpoint is sent as it is; otherwise it is nil.
func (e *Endpoint) readBatch(l *lane, rec []byte, batch []encode.Sample, scratch *[][]byte) (_ []encode.Sample, stored []byte, _ error) {
	max := e.cfg.QueueConfig.MaxSamplesPerSend
	scratchFor := func(i int) *[]byte {
		for len(*scratch) <= i {
			*scratch = append(*scratch, nil)
		}
		return &(*scratch)[i]
	}
	batch, err := decodeRecord(rec, scratchFor(0), batch)
	if err != nil {
		return batch, nil, err
	}
	_, stored, _ = recordHeader(rec) // decodeRecord checked it
	var fits func([]byte) bool
	switch {
	case l.resend && l.buf.Replaying():
		// The marked records, however many: they went as one batch.
	case l.resend:
		return batch, stored, nil
	default:
		fits = func(next []byte) bool {
			k, err := recordSamples(next)
			return err == nil && len(batch)+k <= max
		}
	}
	records := 1 // handed out, corrupt ones included
	for i := 1; fits == nil || len(batch) < max; i++ {
		next, err := l.buf.PeekNext(fits)
		if err != nil {
			break // ErrEmpty, or an I/O error the next Peek meets again
		}
		records++
		more, err := decodeRecord(next, scratchFor(i), batch)
		if err != nil {
			// Handed out, so acknowledged with the batch: count it.
			e.metrics.buf.corrupt.Inc()
			e.log.Error("skipping a disk buffer record that does not decode", "err", err)
			continue
		}
		batch = more
	}
	if records > 1 && !l.resend {
		if err := l.buf.MarkInFlight(); err != nil {
			// Only the count of what a restart resends suffers.
			e.log.Error("marking a batch in flight in the disk buffer", "err", err)
		}
	}
	if records > 1 {
		stored = nil
	}
	return batch, stored, nil
}

// pause waits about max_backoff before a lane tries again, and reports
// whether it may (false once the send context has ended).
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

// closeLane closes l's buffer, which saves its read position, and takes
// its size out of the gauges.
func (e *Endpoint) closeLane(l *lane) {
	if err := l.buf.Close(); err != nil && !errors.Is(err, diskbuf.ErrClosed) {
		e.log.Error("closing a disk buffer", "err", err)
	}
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	e.metrics.buf.bytes.Sub(float64(l.reported.Bytes))
	e.metrics.buf.segments.Sub(float64(l.reported.Segments))
	l.reported.Bytes, l.reported.Segments = 0, 0
}

// reportBuffer brings the endpoint's disk buffer gauges and corrupt
// counter up to date with l's buffer.
func (e *Endpoint) reportBuffer(l *lane) {
	st := l.buf.Stats()
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	e.metrics.buf.bytes.Add(float64(st.Bytes - l.reported.Bytes))
	e.metrics.buf.segments.Add(float64(st.Segments - l.reported.Segments))
	if n := st.Corrupt - l.reported.Corrupt; n > 0 {
		e.metrics.buf.corrupt.Add(float64(n))
		e.log.Warn("skipped corrupt data in the disk buffer", "count", n, "last", st.LastCorrupt)
	}
	l.reported = st
}
