package queue

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
)

// shard is one shard: its memory ring and the goroutine that sends from it,
// one batch at a time, which keeps every series in order.
type shard struct {
	ring *ring
	// flush is closed (by flushNow) to make the shard send what it has
	// without waiting for the batch deadline, and exit once empty.
	flush     chan struct{}
	flushOnce sync.Once
	// kick gets a token (capacity 1) when the feed has handed over a
	// whole snapshot (Endpoint.flush): the shard then sends its partial
	// batch at once instead of waiting out batch_send_deadline.
	kick chan struct{}
	// v1, v2 and vm encode the shard's batches; they keep scratch space
	// between batches. v2 and vm are nil until the endpoint is sent 2.0
	// or VictoriaMetrics' protocol.
	v1 encode.V1Encoder
	v2 *encode.V2Encoder
	vm *encode.VMEncoder
	// bodies are the shard's request bodies, reused once released (body.go).
	bodies bodyPool
	// drained is set by the shard's goroutine when it exits with nothing
	// left to send; read after the generation's WaitGroup.
	drained bool

	// appended counts the samples the feed put in the ring; settled
	// those the shard has done with (accepted, or dropped and counted), in
	// the same order. A Mark compares them (diskbuffer.go).
	appended, settled atomic.Int64
	// resendUntil is the appended count up to which samples may have been
	// delivered before a restart (diskbuffer.go): their batches are sent as
	// resent.
	resendUntil atomic.Int64
}

// flushNow closes the shard's flush channel, once.
func (l *shard) flushNow() { l.flushOnce.Do(func() { close(l.flush) }) }

// generation is a set of shards that share one mapping of series to shards
// (label hash modulo the number of shards). When the shard count changes, a
// new generation takes the new samples; its shards send nothing until the
// previous generation has sent everything it holds, so that every series
// stays in order across the change (as Prometheus stops the old shards
// before it starts the new ones). The feed keeps appending meanwhile.
type generation struct {
	shards []*shard
	// prevDone is closed when the previous generation has finished; nil
	// when there is none.
	prevDone <-chan struct{}
	// wg tracks the shard goroutines.
	wg sync.WaitGroup
	// done is closed when every shard has exited and the generation has
	// left the live list.
	done chan struct{}
}

// newGeneration returns a generation of n shards.
func (e *Endpoint) newGeneration(n int, prevDone <-chan struct{}) *generation {
	g := &generation{prevDone: prevDone, done: make(chan struct{})}
	for range n {
		g.shards = append(g.shards, &shard{ring: newRing(e.cfg.QueueConfig.Capacity), flush: make(chan struct{}), kick: make(chan struct{}, 1)})
	}
	return g
}

// startGeneration starts g's shard goroutines and the one that cleans up
// after them.
func (e *Endpoint) startGeneration(g *generation) {
	for _, l := range g.shards {
		g.wg.Go(func() { e.runShard(g, l) })
	}
	go func() {
		g.wg.Wait()
		e.finishGeneration(g)
	}()
}

// finishGeneration runs once g's shards have exited: g leaves the live list
// and its done channel is closed.
func (e *Endpoint) finishGeneration(g *generation) {
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

// liveGenerations returns the generations whose shards may still run,
// oldest first.
func (e *Endpoint) liveGenerations() []*generation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.gens)
}

// maybeReshard switches to the shard count the resharding loop asks for,
// if any, and if the previous switch has finished: the current
// generation's shards flush and exit once empty, and a new generation takes
// the samples of the appendItems calls from now on. It runs on the
// feed's goroutine, at the start of appendItems.
func (e *Endpoint) maybeReshard() {
	want := int(e.want.Load())
	cur := e.cur
	if want == 0 || want == len(cur.shards) {
		return
	}
	e.mu.Lock()
	busy := len(e.gens) > 1
	e.mu.Unlock()
	if busy {
		return // the previous change is still draining; the loop asks again
	}
	g := e.newGeneration(want, cur.done)
	e.mu.Lock()
	e.gens = append(e.gens, g)
	e.mu.Unlock()
	e.cur = g
	e.shardCount.Store(int64(want))
	e.metrics.shards.Set(float64(want))
	e.log.Info("resharding", "from", len(cur.shards), "to", want)
	e.startGeneration(g)
	for _, l := range cur.shards {
		l.flushNow()
	}
}

// loadCounters are what the shards and appendItems measure for the resharding
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
// closes reshardStop. It only computes: appendItems applies a change
// (maybeReshard).
func (e *Endpoint) runResharding() {
	defer close(e.reshardDone)
	q := e.cfg.QueueConfig
	r := newResharder(q.MinShards, q.MaxShards, e.reshardEvery)
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

// runShard batches and sends one memory-only shard's samples until flushed
// and empty, or until the send context is cancelled. It sends nothing before
// the previous generation has finished.
func (e *Endpoint) runShard(g *generation, l *shard) {
	if !e.waitPrev(g) {
		return // cancelled: Stop counts what the ring holds
	}
	q := e.cfg.QueueConfig
	batch := make([]encode.Sample, 0, q.MaxSamplesPerSend)
	timer := time.NewTimer(q.BatchSendDeadline)
	timer.Stop()
	timerOn, deadline, flushing := false, false, false
	flush := l.flush
	for {
		batch = l.ring.take(batch, q.MaxSamplesPerSend-len(batch))
		if len(batch) >= q.MaxSamplesPerSend || len(batch) > 0 && (deadline || flushing) {
			if !e.settle(l, batch) {
				return // cancelled after the stop deadline: Stop counts the rest
			}
			clear(batch) // drop label references for the GC
			batch = batch[:0]
			if timerOn {
				timer.Stop()
				timerOn = false
			}
			deadline = false
			if e.sendCtx.Err() != nil {
				return // cancelled after the stop deadline: Stop counts the rest
			}
			continue
		}
		if flushing && len(batch) == 0 {
			l.drained = true
			return // the feed has moved on or stopped, and the ring is empty
		}
		if len(batch) > 0 && !timerOn {
			timer.Reset(q.BatchSendDeadline)
			timerOn = true
		}
		select {
		case <-l.ring.notEmpty:
		case <-timer.C:
			timerOn, deadline = false, true
		case <-l.kick:
			// The whole snapshot is queued: what is taken now is its end.
			deadline = true
		case <-flush:
			flushing = true
			flush = nil // closed: stop selecting on it
		case <-e.sendCtx.Done():
			// Taken from the ring, so Stop did not count them.
			if e.disk == nil {
				e.dropAtShutdown(len(batch))
				e.metrics.queueLength.Sub(float64(len(batch)))
			}
			return
		}
	}
}

// settle sends batch until it is done with (accepted, or dropped and
// counted) and counts it as settled; it reports false if the send context
// ended first. In memory a batch is done with after one delivery. With a
// disk buffer a batch whose retries ended is kept and tried again after a
// pause, and one cut off by the stop deadline is left: its frame stays in
// the log (diskbuffer.go).
func (e *Endpoint) settle(l *shard, batch []encode.Sample) bool {
	resent := l.resendUntil.Load() - l.settled.Load()
	if resent > 0 && resent < int64(len(batch)) {
		// Only the head of the batch may have been delivered before a
		// restart: send it on its own, as resent, then the rest.
		return e.settle(l, batch[:resent]) && e.settle(l, batch[resent:])
	}
	d := delivery{keep: e.disk != nil, resent: resent > 0}
	for send := batch; ; {
		var o outcome
		o, send = e.sendBatch(l, send, d, nil)
		if o == delivered {
			break
		}
		if e.disk == nil || o == stopped || !e.pause() {
			if e.disk == nil {
				e.metrics.queueLength.Sub(float64(len(batch)))
			}
			return false
		}
	}
	l.settled.Add(int64(len(batch)))
	if e.disk == nil {
		e.metrics.queueLength.Sub(float64(len(batch)))
	} else {
		e.ackSettled()
	}
	return e.sendCtx.Err() == nil
}
