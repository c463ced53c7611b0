package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// A reload (SIGHUP, POST /-/reload) reads the configuration file again and
// applies what changed, between two snapshots, on the goroutine that takes
// them, so that no snapshot sees half of it:
//
//   - remote_write: new endpoints start; removed and changed ones stop and
//     deliver what they hold within shutdown_timeout. Such a flush runs in
//     the background, unless a new endpoint sends to the same URL: then it
//     ends before the next snapshot, so that a receiver gets each series in
//     order. When the families selected change, the endpoints kept get the
//     new metadata (queue.Endpoint.SetMetadata) without a restart.
//   - resources and their filters, external labels, shard: a resource
//     whose rendering changed gets new reflectors and series maps, which
//     replace the old ones once their initial list is stored (its series
//     flow on meanwhile); a resource no longer watched stops, and each of
//     its series gets one staleness marker, as do series the replacement no
//     longer has.
//   - snapshot_interval, shutdown_timeout, push_self_metrics: at once.
//   - kubeconfig, listen_address, leader_election and auto_sharding are read
//     only at start: a reload that changes them is refused, naming them.
//
// A configuration that does not load, or is refused, changes nothing.

// RefusedError is a reload refused because of the new configuration: it
// does not load, changes a key read only at start, or its endpoints cannot
// be built. The running configuration stays.
type RefusedError struct {
	// Err says why.
	Err error
}

func (e *RefusedError) Error() string { return "new configuration refused: " + e.Err.Error() }

// Unwrap returns why.
func (e *RefusedError) Unwrap() error { return e.Err }

// reloadRequest hands a loaded configuration to the snapshot goroutine.
type reloadRequest struct {
	// cfg is the new configuration.
	cfg *Config
	// result receives the outcome; it has room for it.
	result chan error
}

// reloadMetrics tell whether the last reload worked, as Prometheus'
// prometheus_config_last_reload_successful and
// prometheus_config_last_reload_success_timestamp_seconds do.
type reloadMetrics struct {
	// success is 1 after a successful reload (or the start), 0 after a
	// failed one.
	success prometheus.Gauge
	// successTime is when the configuration was last applied.
	successTime prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	m := &reloadMetrics{
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "config", Name: "last_reload_successful",
			Help: "1 if the last configuration reload (or the start) succeeded, 0 if it failed and the previous configuration still runs.",
		}),
		successTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "config", Name: "last_reload_success_timestamp_seconds",
			Help: "Time the configuration was last applied, at start or by a reload.",
		}),
	}
	reg.MustRegister(m.success, m.successTime)
	m.record(nil)
	return m
}

// record counts a reload's outcome.
func (m *reloadMetrics) record(err error) {
	if err != nil {
		m.success.Set(0)
		return
	}
	m.success.Set(1)
	m.successTime.SetToCurrentTime()
}

// Reload reads the configuration file again and applies what changed
// between two snapshots. On error the running configuration stays; a
// *RefusedError means the new configuration was at fault. Reload waits for
// Run to take the request, until ctx ends.
func (a *Agent) Reload(ctx context.Context) error {
	if a.configFile == "" {
		return a.reloaded(nil, errors.New("reloading: the agent was not given a configuration file to read again"))
	}
	cfg, err := LoadFile(a.configFile)
	if err != nil {
		return a.reloaded(nil, &RefusedError{Err: err})
	}
	req := reloadRequest{cfg: cfg, result: make(chan error, 1)}
	select {
	case a.reloads <- req:
	case <-a.loopDone:
		return a.reloaded(nil, errors.New("reloading: the agent is not running"))
	case <-ctx.Done():
		return a.reloaded(nil, fmt.Errorf("reloading: %w", ctx.Err()))
	}
	select {
	case err := <-req.result:
		return err // logged and counted by the loop
	case <-ctx.Done():
		return fmt.Errorf("reloading: %w; the new configuration may still be applied", ctx.Err())
	}
}

// reloaded logs and counts a reload's outcome and returns err.
func (a *Agent) reloaded(d *configDiff, err error) error {
	a.reloadMetrics.record(err)
	if err != nil {
		a.log.Error("reloading the configuration; the running one stays", "file", a.configFile, "err", err)
		return err
	}
	a.log.Info("configuration reloaded", "file", a.configFile, "changes", d.String())
	return nil
}

// handleReload serves POST /-/reload: 200 once the new configuration is
// applied, 400 with the reason when it is refused, 500 when the agent
// could not reload at all.
func (a *Agent) handleReload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST to reload the configuration", http.StatusMethodNotAllowed)
		return
	}
	err := a.Reload(r.Context())
	var refused *RefusedError
	switch {
	case err == nil:
		_, _ = w.Write([]byte("configuration reloaded\n"))
	case errors.As(err, &refused):
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// apply makes cfg the running configuration. It runs on the snapshot
// goroutine, between snapshots. Everything that can fail is built before
// anything changes.
func (a *Agent) apply(cfg *Config) error {
	d := diffConfigs(a.cfg, cfg, a.sharding)
	if len(d.restartOnly) > 0 {
		return a.reloaded(nil, &RefusedError{Err: fmt.Errorf(
			"%s changed, which is read only at start: restart the agent to change it", strings.Join(d.restartOnly, ", "))})
	}
	md := familyMetadata(cfg)
	fresh := map[string]*endpoint{}
	kept := map[string]bool{}
	for _, rw := range cfg.RemoteWrite {
		if old := a.endpointNamed(rw.Name); old != nil && sameEndpoint(old.cfg, rw) {
			kept[rw.Name] = true
		}
	}
	// handedOver holds the running endpoints stopped early because a new
	// one takes over their disk buffer directory, which only one endpoint
	// may hold at a time.
	handedOver := map[string]*endpoint{}
	for _, rw := range cfg.RemoteWrite {
		if kept[rw.Name] {
			continue
		}
		a.handOverDisk(rw.DiskBuffer.Directory, kept, handedOver)
		e, err := a.newEndpoint(rw, md)
		if err != nil {
			for _, e := range fresh {
				e.q.Close()
			}
			a.restartHandedOver(handedOver)
			return a.reloaded(nil, &RefusedError{Err: fmt.Errorf("remote_write %q: %w", rw.Name, err)})
		}
		fresh[rw.Name] = e
	}

	a.swapEndpoints(cfg, fresh, handedOver)
	if d.metadataChanged {
		for _, e := range a.endpoints {
			if kept[e.cfg.Name] {
				e.q.SetMetadata(md) // the fresh ones were built with it
			}
		}
	}
	a.swapGroups(cfg)
	ext := externalLabels(cfg.ExternalLabels)
	switch {
	case !cfg.PushSelfMetrics:
		a.snap.self = nil
	case a.snap.self == nil:
		a.snap.self = newSelfPush(a.reg, ext, a.log)
	default:
		a.snap.self.b.SetExternal(ext)
	}
	if cfg.SnapshotInterval != a.cfg.SnapshotInterval && a.ticker != nil {
		a.ticker.Reset(cfg.SnapshotInterval)
	}
	a.cfg = cfg
	a.interval.Store(int64(cfg.SnapshotInterval))
	a.refresh()
	return a.reloaded(&d, nil)
}

// endpoint is one remote_write entry at run time.
type endpoint struct {
	// cfg is the entry it was built from.
	cfg queue.Config
	// q queues and sends.
	q *queue.Endpoint
	// app is what the feed queues samples to: q, behind a relabeler when
	// the entry has write_relabel_configs.
	app appender
	// feed takes the snapshots for q (feed.go).
	feed *feed
}

// newEndpoint builds (but does not start) an endpoint sending md as the
// families' metadata.
func (a *Agent) newEndpoint(cfg queue.Config, md map[string]encode.Metadata) (*endpoint, error) {
	q, err := queue.New(cfg, queue.Options{Logger: a.log, Metrics: a.queueMetrics, UserAgent: "kube-state-push/" + Version, Metadata: md})
	if err != nil {
		return nil, err
	}
	e := &endpoint{cfg: cfg, q: q, app: q}
	if len(cfg.WriteRelabelConfigs) > 0 {
		e.app = newRelabeler(q, cfg.WriteRelabelConfigs, a.log.With("endpoint", cfg.Name))
	}
	e.feed = newFeed(e.app, q, a.pendingFrames)
	return e, nil
}

// start starts the queue and its feed.
func (e *endpoint) start() {
	e.q.Start()
	e.feed.start()
}

// stop hands the queue the snapshots still waiting for it, then stops it,
// both within ctx: what is left then is dropped in memory, or stays in the
// disk buffer.
func (e *endpoint) stop(ctx context.Context) error {
	e.feed.stop(ctx)
	return e.q.Stop(ctx)
}

// pendingBacklog is how much time of snapshots an endpoint's feed keeps
// waiting while the endpoint cannot take them (its memory queue is full,
// or its disk is slow); past it the oldest snapshots are dropped whole, as
// queue_full. An endpoint with a disk buffer takes snapshots as fast as its
// disk writes them, so this holds only for an endpoint without one, for
// which it bounds the memory a receiver outage costs.
const pendingBacklog = 5 * time.Minute

// pendingFrames is how many snapshots a feed keeps waiting: pendingBacklog
// at the current snapshot_interval, at least 2.
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
		e, err := a.newEndpoint(old.cfg, md)
		if err != nil {
			a.log.Error("restarting an endpoint after a refused reload: it stays stopped", "endpoint", old.cfg.Name, "err", err)
			continue
		}
		old.q, old.app, old.feed = e.q, e.app, e.feed
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
// replaces, starts fresh, and lists the endpoints in cfg's order.
func (a *Agent) swapEndpoints(cfg *Config, fresh, handedOver map[string]*endpoint) {
	urls := map[string]bool{}
	for _, e := range fresh {
		urls[e.cfg.URL] = true
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
		if urls[old.cfg.URL] {
			// The new endpoint sends to the same receiver: it starts once
			// the old one is done, so each series arrives in order.
			a.stopEndpoint(old, timeout)
			if _, named := keep[old.cfg.Name]; !named {
				a.queueMetrics.Forget(old.cfg.Name)
			}
			continue
		}
		a.draining.Add(1)
		go func() {
			defer a.draining.Done()
			a.stopEndpoint(old, timeout)
			if _, named := keep[old.cfg.Name]; !named {
				a.drainMu.Lock()
				a.forget = append(a.forget, old.cfg.Name)
				a.drainMu.Unlock()
			}
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
	a.log.Info("endpoint stopped by a reload; its queue was delivered", "endpoint", e.cfg.Name, "took", time.Since(start))
}

// swapGroups makes the watched resources cfg's: it starts the groups of new
// resources, and replacements (pending until their initial list is stored)
// for resources whose key changed, and retires the groups of resources no
// longer watched.
func (a *Agent) swapGroups(cfg *Config) {
	shard, total := a.sharding(cfg)
	owns := (&watch.Config{Shard: shard, TotalShards: total}).Owner()
	active := map[string]*watchGroup{}
	for _, g := range a.groups {
		active[g.resource.Name] = g
	}
	groups := make([]*watchGroup, 0, len(cfg.Watch.Resources))
	for _, name := range cfg.Watch.Resources {
		r, ok := watch.Lookup(name)
		if !ok {
			continue // Validate refuses unknown resources
		}
		key := groupKey(cfg, r, shard, total)
		g := active[name]
		delete(active, name)
		switch {
		case g == nil:
			g = newGroup(cfg, r, key, owns, a.metrics, a.log)
			g.start(a.watchCtx, a.clients)
		case g.key == key:
			a.dropPending(name)
		case a.pending[name] == nil || a.pending[name].key != key:
			a.dropPending(name)
			p := newGroup(cfg, r, key, owns, a.metrics, a.log)
			p.start(a.watchCtx, a.clients)
			a.pending[name] = p
		}
		groups = append(groups, g)
	}
	for name, g := range active {
		a.dropPending(name)
		g.stop()
		for _, m := range g.maps {
			retire(m, nil)
		}
		a.retiring = append(a.retiring, g.maps...)
	}
	a.groups = groups
}

// dropPending stops and forgets a resource's pending replacement, if any.
func (a *Agent) dropPending(name string) {
	if p := a.pending[name]; p != nil {
		p.stop()
		delete(a.pending, name)
	}
}

// promote puts in place the pending groups that hold their initial list:
// the old group stops, and its series that the new one lacks get staleness
// markers in the coming snapshot.
func (a *Agent) promote() {
	changed := false
	for i, g := range a.groups {
		p := a.pending[g.resource.Name]
		if p == nil || !p.synced() {
			continue
		}
		g.stop()
		keep := p.hashes()
		for _, m := range g.maps {
			retire(m, keep)
		}
		a.retiring = append(a.retiring, g.maps...)
		a.groups[i] = p
		delete(a.pending, g.resource.Name)
		changed = true
	}
	if changed {
		a.refresh()
	}
}

// snapshot takes one snapshot at t: pending groups that are ready first,
// then the snapshot, which sends the retired maps' staleness markers, after
// which they are dropped.
func (a *Agent) snapshot(t time.Time) int {
	a.forgetRemoved()
	a.promote()
	a.openGate()
	n := a.snap.tick(t)
	if len(a.retiring) > 0 && !a.snap.held() {
		a.retiring = nil
		a.refresh()
	}
	return n
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

// refresh hands the running groups, retired maps and endpoints to the
// snapshotter and the readiness probe.
func (a *Agent) refresh() {
	var maps []*seriesMap
	for _, g := range a.groups {
		maps = append(maps, g.maps...)
	}
	ready := slices.Clone(maps)
	a.readyMaps.Store(&ready)
	a.snap.maps = append(maps, a.retiring...)
	sinks := make([]frameSink, len(a.endpoints))
	for i, e := range a.endpoints {
		sinks[i] = e.feed
	}
	a.snap.sinks = sinks
}

// sharding returns the shard and shard count cfg renders with: its own, or
// with auto_sharding those found at start.
func (a *Agent) sharding(cfg *Config) (shard, total int) {
	if cfg.Watch.AutoSharding {
		return a.autoShard, a.autoTotal
	}
	return cfg.Watch.Shard, cfg.Watch.TotalShards
}

// configDiff is what a reload changes.
type configDiff struct {
	// restartOnly lists the keys read only at start that changed.
	restartOnly []string
	// endpointsAdded, endpointsRemoved and endpointsChanged name the
	// remote_write entries.
	endpointsAdded, endpointsRemoved, endpointsChanged []string
	// metadataChanged is set when the families selected changed: every
	// endpoint kept then gets their metadata (queue.Endpoint.SetMetadata).
	metadataChanged bool
	// resourcesAdded, resourcesRemoved and resourcesChanged name the
	// resources; a changed one renders differently (scopes, families,
	// external labels, shard).
	resourcesAdded, resourcesRemoved, resourcesChanged []string
	// snapshotInterval, shutdownTimeout, pushSelfMetrics and
	// externalLabels are set when those keys changed.
	snapshotInterval, shutdownTimeout, pushSelfMetrics, externalLabels bool
}

// diffConfigs compares the running configuration with a new one; sharding
// gives the shard each renders with.
func diffConfigs(old, cur *Config, sharding func(*Config) (int, int)) configDiff {
	var d configDiff
	if old.Watch.Kubeconfig != cur.Watch.Kubeconfig {
		d.restartOnly = append(d.restartOnly, "kubeconfig")
	}
	if old.ListenAddress != cur.ListenAddress {
		d.restartOnly = append(d.restartOnly, "listen_address")
	}
	if old.LeaderElection != cur.LeaderElection {
		d.restartOnly = append(d.restartOnly, "leader_election")
	}
	if old.Watch.AutoSharding != cur.Watch.AutoSharding {
		d.restartOnly = append(d.restartOnly, "auto_sharding")
	}

	olds := map[string]queue.Config{}
	for _, rw := range old.RemoteWrite {
		olds[rw.Name] = rw
	}
	for _, rw := range cur.RemoteWrite {
		o, ok := olds[rw.Name]
		switch {
		case !ok:
			d.endpointsAdded = append(d.endpointsAdded, rw.Name)
		case !sameEndpoint(o, rw):
			d.endpointsChanged = append(d.endpointsChanged, rw.Name)
		}
		delete(olds, rw.Name)
	}
	for _, rw := range old.RemoteWrite {
		if _, gone := olds[rw.Name]; gone {
			d.endpointsRemoved = append(d.endpointsRemoved, rw.Name)
		}
	}
	d.metadataChanged = !reflect.DeepEqual(familyMetadata(old), familyMetadata(cur))

	oldShard, oldTotal := sharding(old)
	curShard, curTotal := sharding(cur)
	oldRes := map[string]bool{}
	for _, name := range old.Watch.Resources {
		oldRes[name] = true
	}
	for _, name := range cur.Watch.Resources {
		r, ok := watch.Lookup(name)
		switch {
		case !ok:
		case !oldRes[name]:
			d.resourcesAdded = append(d.resourcesAdded, name)
		case groupKey(old, r, oldShard, oldTotal) != groupKey(cur, r, curShard, curTotal):
			d.resourcesChanged = append(d.resourcesChanged, name)
		}
		delete(oldRes, name)
	}
	for _, name := range old.Watch.Resources {
		if oldRes[name] {
			d.resourcesRemoved = append(d.resourcesRemoved, name)
		}
	}

	d.snapshotInterval = old.SnapshotInterval != cur.SnapshotInterval
	d.shutdownTimeout = old.ShutdownTimeout != cur.ShutdownTimeout
	d.pushSelfMetrics = old.PushSelfMetrics != cur.PushSelfMetrics
	d.externalLabels = !reflect.DeepEqual(externalLabels(old.ExternalLabels), externalLabels(cur.ExternalLabels))
	return d
}

// sameEndpoint reports whether two remote_write entries are the same.
// Relabel rules compare as YAML (they hold compiled regular expressions);
// the rest field by field, secrets included, which YAML would mask.
func sameEndpoint(x, y queue.Config) bool {
	rx, ry := x.WriteRelabelConfigs, y.WriteRelabelConfigs
	x.WriteRelabelConfigs, y.WriteRelabelConfigs = nil, nil
	if !reflect.DeepEqual(x, y) {
		return false
	}
	bx, errx := yaml.Marshal(rx)
	by, erry := yaml.Marshal(ry)
	return errx == nil && erry == nil && bytes.Equal(bx, by)
}

// String lists the changes for the log, e.g.
// "remote_write changed [central]; resources added [configmaps]".
func (d *configDiff) String() string {
	var parts []string
	list := func(what string, names []string) {
		if len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", what, names))
		}
	}
	list("remote_write added", d.endpointsAdded)
	list("remote_write removed", d.endpointsRemoved)
	list("remote_write changed", d.endpointsChanged)
	if d.metadataChanged {
		parts = append(parts, "families selected (their metadata sent from now on)")
	}
	list("resources added", d.resourcesAdded)
	list("resources removed", d.resourcesRemoved)
	list("resources changed", d.resourcesChanged)
	for _, k := range []struct {
		changed bool
		key     string
	}{
		{d.externalLabels, "external_labels"},
		{d.snapshotInterval, "snapshot_interval"},
		{d.shutdownTimeout, "shutdown_timeout"},
		{d.pushSelfMetrics, "push_self_metrics"},
	} {
		if k.changed {
			parts = append(parts, k.key)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
