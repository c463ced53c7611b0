package queue

import (
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuf"
)

// lane is one shard: its queue (a memory ring, or a disk buffer) and the
// goroutine that sends from it, one batch at a time, which keeps every
// series in order.
type lane struct {
	// ring holds the samples waiting to be sent; nil with a disk buffer.
	ring *ring
	// buf holds the lane's batches on disk; nil without a disk buffer.
	buf *diskbuf.Buffer
	// flush is closed (by flushNow) to make the lane send what it has
	// without waiting for the batch deadline, and exit once empty.
	flush     chan struct{}
	flushOnce sync.Once
	// kick gets a token (capacity 1) when the producer has handed over a
	// whole snapshot (Endpoint.Flush): a memory lane then sends its partial
	// batch at once instead of waiting out batch_send_deadline.
	kick chan struct{}
	// v1 and v2 encode the lane's batches; they keep scratch space
	// between batches. v2 is nil until the endpoint is sent 2.0.
	v1 encode.V1Encoder
	v2 *encode.V2Encoder
	// bodies are the lane's request bodies, reused once released (body.go).
	bodies bodyPool
	// resend is set on a disk lane that held unacknowledged batches when
	// the endpoint started, until its first batch is answered: that batch
	// may have been delivered before the restart. Only the lane's
	// goroutine uses it once started.
	resend bool
	// drained is set by the lane's goroutine when it exits with nothing
	// left to send; read after the generation's WaitGroup.
	drained bool
	// dirty is set when the producer wrote to the lane's disk buffer since
	// the last Flush, which fsyncs it; only the producer uses it.
	dirty bool

	// statsMu guards reported.
	statsMu sync.Mutex
	// reported is the disk buffer's size and corrupt count as last added
	// to the endpoint's gauges and counter.
	reported diskbuf.Stats
}

// flushNow closes the lane's flush channel, once.
func (l *lane) flushNow() { l.flushOnce.Do(func() { close(l.flush) }) }

// generation is a set of lanes that share one mapping of series to lanes
// (label hash modulo the number of lanes). When the shard count changes, a
// new generation takes the new samples; its lanes send nothing until the
// previous generation has sent everything it holds, so that every series
// stays in order across the change (as Prometheus stops the old shards
// before it starts the new ones). The producer keeps appending meanwhile.
type generation struct {
	// num numbers the generation's directory; 0 in memory.
	num uint64
	// dir is the generation's directory; "" in memory.
	dir string
	// lanes are the generation's shards.
	lanes []*lane
	// prevDone is closed when the previous generation has finished; nil
	// when there is none.
	prevDone <-chan struct{}
	// wg tracks the lane goroutines.
	wg sync.WaitGroup
	// done is closed when every lane has exited and the generation has
	// been cleaned up.
	done chan struct{}
	// superseded is set once a newer generation takes the new samples: a
	// fully drained superseded generation deletes its directory.
	superseded atomic.Bool
}

// newMemoryGeneration returns a generation of n memory lanes.
func (e *Endpoint) newMemoryGeneration(n int, prevDone <-chan struct{}) *generation {
	g := &generation{prevDone: prevDone, done: make(chan struct{})}
	for range n {
		g.lanes = append(g.lanes, &lane{ring: newRing(e.cfg.QueueConfig.Capacity), flush: make(chan struct{}), kick: make(chan struct{}, 1)})
	}
	return g
}

// newGeneration returns a generation of n lanes, on disk or in memory.
func (e *Endpoint) newGeneration(n int, prevDone <-chan struct{}) (*generation, error) {
	if e.disk == nil {
		return e.newMemoryGeneration(n, prevDone), nil
	}
	return e.disk.create(e, n, prevDone)
}

// startGeneration starts g's lane goroutines and the one that cleans up
// after them.
func (e *Endpoint) startGeneration(g *generation) {
	for _, l := range g.lanes {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if l.buf != nil {
				e.runDiskLane(g, l)
			} else {
				e.runShard(g, l)
			}
		}()
	}
	go func() {
		g.wg.Wait()
		e.finishGeneration(g)
	}()
}

// finishGeneration runs once g's lanes have exited: a superseded
// generation whose lanes sent everything deletes its directory; g leaves
// the live list and its done channel is closed.
func (e *Endpoint) finishGeneration(g *generation) {
	if g.dir != "" && g.superseded.Load() && !slices.ContainsFunc(g.lanes, func(l *lane) bool { return !l.drained }) {
		if err := os.RemoveAll(g.dir); err != nil {
			e.log.Error("removing a drained disk buffer generation", "dir", g.dir, "err", err)
		}
	}
	e.mu.Lock()
	e.gens = slices.DeleteFunc(e.gens, func(x *generation) bool { return x == g })
	e.mu.Unlock()
	close(g.done)
}

// waitPrev blocks until g's previous generation has finished, or the send
// context ends; it reports whether g may send.
func (e *Endpoint) waitPrev(g *generation) bool {
	if g.prevDone == nil {
		return true
	}
	select {
	case <-g.prevDone:
		return true
	case <-e.sendCtx.Done():
		return false
	}
}

// liveGenerations returns the generations whose lanes may still run,
// oldest first.
func (e *Endpoint) liveGenerations() []*generation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.gens)
}

// maybeReshard switches to the shard count the resharding loop asks for,
// if any, and if the previous switch has finished: the current
// generation's lanes flush and exit once empty, and a new generation takes
// the samples of the Append calls from now on. It runs on the producer's
// goroutine, at the start of Append.
func (e *Endpoint) maybeReshard() {
	want := int(e.want.Load())
	cur := e.cur
	if want == 0 || want == len(cur.lanes) {
		return
	}
	e.mu.Lock()
	busy := len(e.gens) > 1
	e.mu.Unlock()
	if busy {
		return // the previous change is still draining; the loop asks again
	}
	g, err := e.newGeneration(want, cur.done)
	if err != nil {
		e.log.Error("resharding: keeping the current shards", "from", len(cur.lanes), "to", want, "err", err)
		e.want.Store(0)
		return
	}
	e.mu.Lock()
	e.gens = append(e.gens, g)
	e.mu.Unlock()
	e.cur = g
	e.shardCount.Store(int64(want))
	e.metrics.shards.Set(float64(want))
	e.log.Info("resharding", "from", len(cur.lanes), "to", want)
	cur.superseded.Store(true)
	e.startGeneration(g)
	for _, l := range cur.lanes {
		l.flushNow()
	}
}

// loadCounters are what the lanes and Append measure for the resharding
// loop, which takes and resets them every interval.
type loadCounters struct {
	// in, out and dropped count samples queued, accepted and given up on.
	in, out, dropped atomic.Int64
	// retries counts retried requests (see retryCounter).
	retries atomic.Int64
	// sendNanos sums the time spent sending batches.
	sendNanos atomic.Int64
	// highestIn and highestSent are the newest timestamps (ms) queued and
	// settled (sent or dropped); they are never reset.
	highestIn, highestSent atomic.Int64
}

// take returns the load since the last call and resets the counters.
func (c *loadCounters) take() shardLoad {
	l := shardLoad{
		In:       float64(c.in.Swap(0)),
		Out:      float64(c.out.Swap(0)),
		Dropped:  float64(c.dropped.Swap(0)),
		SendTime: time.Duration(c.sendNanos.Swap(0)),
		Retried:  c.retries.Swap(0) > 0,
	}
	if in, sent := c.highestIn.Load(), c.highestSent.Load(); in > sent {
		l.Delay = float64(in-sent) / 1000
	}
	return l
}

// settled counts a batch that got its final answer: accepted (ok) or
// dropped.
func (c *loadCounters) settled(batch []encode.Sample, ok bool) {
	if ok {
		c.out.Add(int64(len(batch)))
	} else {
		c.dropped.Add(int64(len(batch)))
	}
	newest := int64(math.MinInt64)
	for i := range batch {
		newest = max(newest, batch[i].Timestamp)
	}
	storeMax(&c.highestSent, newest)
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// runResharding reconsiders the shard count every reshardEvery until Stop
// closes reshardStop. It only computes: Append applies a change
// (maybeReshard).
func (e *Endpoint) runResharding() {
	defer close(e.reshardDone)
	q := e.cfg.QueueConfig
	r := newResharder(q.MinShards, q.MaxShards, e.reshardEvery)
	r.holdWhileBehind = e.disk != nil
	t := time.NewTicker(e.reshardEvery)
	defer t.Stop()
	for {
		select {
		case <-e.reshardStop:
			return
		case <-t.C:
		}
		cur := int(e.shardCount.Load())
		load := e.load.take()
		desired, n := r.next(cur, load)
		if !math.IsNaN(desired) {
			e.metrics.buf.desired.Set(desired)
		}
		e.log.Debug("resharding check", "shards", cur, "desired", desired, "next", n,
			"in", load.In, "out", load.Out, "dropped", load.Dropped, "send_time", load.SendTime, "delay_seconds", load.Delay, "retried", load.Retried)
		if n != cur {
			e.want.Store(int64(n))
		} else {
			e.want.Store(0)
		}
	}
}
