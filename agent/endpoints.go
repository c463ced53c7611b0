package agent

import (
	"context"
	"sync"
	"time"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
)

// The remote_write endpoints at run time: each a queue.Endpoint, started,
// stopped and swapped by reloads (reload.go).

// endpoint is one remote_write entry at run time.
type endpoint struct {
	// cfg is the entry it was built from.
	cfg queue.Config
	// q takes the snapshots and sends them.
	q *queue.Endpoint
}

// newEndpoint builds (but does not start) an endpoint sending md as the
// families' metadata, and nothing before after is closed (nil: at once).
func (a *Agent) newEndpoint(cfg queue.Config, md map[string]encode.Metadata, after <-chan struct{}) (*endpoint, error) {
	q, err := queue.New(cfg, queue.Options{Logger: a.log, Metrics: a.queueMetrics, UserAgent: "kube-state-push/" + Version,
		Metadata: md, After: after, FramesWaiting: a.pendingFrames})
	if err != nil {
		return nil, err
	}
	return &endpoint{cfg: cfg, q: q}, nil
}

// start starts the endpoint.
func (e *endpoint) start() { e.q.Start() }

// stop sends the snapshots the endpoint holds, within ctx: what is left
// then is dropped in memory, or stays in the disk buffer.
func (e *endpoint) stop(ctx context.Context) error { return e.q.Stop(ctx) }

// pendingBacklog is how much time of snapshots an endpoint keeps waiting
// while its shards cannot take them (its memory queue is full,
// or its disk is slow); past it the oldest snapshots are dropped whole, as
// queue_full. An endpoint with a disk buffer takes snapshots as fast as its
// disk writes them, so this holds only for an endpoint without one, for
// which it bounds the memory a receiver outage costs.
const pendingBacklog = 5 * time.Minute

// pendingFrames is how many snapshots an endpoint keeps waiting
// (queue.Options.FramesWaiting): pendingBacklog at the current
// snapshot_interval, at least 2.
func (a *Agent) pendingFrames() int {
	return max(2, int(pendingBacklog/time.Duration(a.interval.Load())))
}

// handoverTimeout bounds how long a running endpoint may go on sending
// before it hands its disk buffer directory to its replacement: what it has
// not sent by then stays on disk, and the replacement sends it, first.
const handoverTimeout = time.Second

// handOverDisk stops the running endpoint (not kept by the reload) whose
// disk buffer is dir, if any, so that the endpoint replacing it can take
// the directory over, backlog included; it records it in handedOver.
func (a *Agent) handOverDisk(dir string, kept map[string]bool, handedOver map[string]*endpoint) {
	if dir == "" {
		return
	}
	for _, old := range a.endpoints {
		if old.cfg.DiskBuffer.Directory != dir || kept[old.cfg.Name] || handedOver[old.cfg.Name] != nil {
			continue
		}
		a.stopEndpoint(old, handoverTimeout)
		handedOver[old.cfg.Name] = old
	}
}

// restartHandedOver builds and starts again, from their own configuration,
// the endpoints stopped for a reload that was then refused, so that the old
// configuration runs on.
func (a *Agent) restartHandedOver(handedOver map[string]*endpoint) {
	md := familyMetadata(a.cfg) // the running configuration's families
	for _, old := range handedOver {
		e, err := a.newEndpoint(old.cfg, md, nil)
		if err != nil {
			a.log.Error("restarting an endpoint after a refused reload: it stays stopped", "endpoint", old.cfg.Name, "err", err)
			continue
		}
		old.q = e.q
		old.start()
	}
	if len(handedOver) > 0 {
		a.refresh() // snapshots go to the restarted endpoints
	}
}

// endpointNamed returns the running endpoint of that name, or nil.
func (a *Agent) endpointNamed(name string) *endpoint {
	for _, e := range a.endpoints {
		if e.cfg.Name == name {
			return e
		}
	}
	return nil
}

// swapEndpoints stops the endpoints that cfg removes or that fresh
// replaces, in the background, each within shutdown_timeout, starts fresh,
// and lists the endpoints in cfg's order. replaced has a channel for each
// URL whose running endpoints stop while a fresh one sends there: it is
// closed once they have all stopped, and the fresh one sends only then.
func (a *Agent) swapEndpoints(cfg *config.Config, fresh, handedOver map[string]*endpoint, replaced map[string]chan struct{}) {
	stopping := map[string]*sync.WaitGroup{} // by URL, for replaced
	for url := range replaced {
		stopping[url] = &sync.WaitGroup{}
	}
	keep := map[string]bool{}
	for _, rw := range cfg.RemoteWrite {
		keep[rw.Name] = fresh[rw.Name] == nil
	}
	timeout := a.cfg.ShutdownTimeout
	for _, old := range a.endpoints {
		if keep[old.cfg.Name] || handedOver[old.cfg.Name] != nil {
			continue // kept, or already stopped
		}
		wg := stopping[old.cfg.URL]
		if wg != nil {
			wg.Add(1)
		}
		a.draining.Add(1)
		go func() {
			defer a.draining.Done()
			a.stopEndpoint(old, timeout)
			if wg != nil {
				wg.Done()
			}
			if _, named := keep[old.cfg.Name]; !named {
				a.drainMu.Lock()
				a.forget = append(a.forget, old.cfg.Name)
				a.drainMu.Unlock()
			}
		}()
	}
	for url, wg := range stopping {
		go func() {
			wg.Wait()
			close(replaced[url])
		}()
	}
	list := make([]*endpoint, 0, len(cfg.RemoteWrite))
	for _, rw := range cfg.RemoteWrite {
		e := fresh[rw.Name]
		if e == nil {
			e = a.endpointNamed(rw.Name)
		} else {
			e.start()
		}
		list = append(list, e)
	}
	a.endpoints = list
}

// stopEndpoint stops an endpoint a reload replaced or removed, delivering
// what it holds within timeout. Samples it had to drop make Run's error.
func (a *Agent) stopEndpoint(e *endpoint, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if err := e.stop(ctx); err != nil {
		a.drainMu.Lock()
		a.drainErrs = append(a.drainErrs, err)
		a.drainMu.Unlock()
		return
	}
	if n := e.q.LeftOnDisk(); n > 0 {
		a.log.Info("endpoint stopped by a reload; its backlog stays in the disk buffer for the endpoint that takes the directory over, or the next start",
			"endpoint", e.cfg.Name, "samples", n, "took", time.Since(start))
		return
	}
	a.log.Info("endpoint stopped by a reload; its queue was delivered", "endpoint", e.cfg.Name, "took", time.Since(start))
}

// forgetRemoved deletes the self-metrics of the endpoints a reload removed
// that have stopped since, unless an endpoint of the same name runs again.
// It runs on the snapshot goroutine, which alone changes a.endpoints.
func (a *Agent) forgetRemoved() {
	a.drainMu.Lock()
	names := a.forget
	a.forget = nil
	a.drainMu.Unlock()
	for _, name := range names {
		if a.endpointNamed(name) == nil {
			a.queueMetrics.Forget(name)
		}
	}
}
