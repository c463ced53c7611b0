package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/internal/redact"
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
//   - kubeconfig, kube_api_compression, listen_address, leader_election and
//     auto_sharding are read only at start: a reload that changes them is
//     refused, naming them.
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
	cfg *config.Config
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
	cfg, err := config.LoadFile(a.configFile)
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
		// The error goes to the log and to /-/reload's answer: should any
		// part of it quote a URL, its credentials are masked.
		err = redact.Error(err)
		a.log.Error("reloading the configuration; the running one stays", "file", a.configFile, "err", err)
		return err
	}
	a.log.Info("configuration reloaded", "file", a.configFile, "changes", d.String())
	return nil
}

// handleReload serves POST (or PUT, as Prometheus) /-/reload: 200 once the
// new configuration is applied, 400 with the reason when it is refused, 500
// when the agent could not reload at all. The server serves it only with
// Options.EnableLifecycle (lifecycleOnly).
func (a *Agent) handleReload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPost+", "+http.MethodPut)
		http.Error(w, "Only POST or PUT requests allowed", http.StatusMethodNotAllowed)
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
func (a *Agent) apply(cfg *config.Config) error {
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
	// replaced holds, by URL, what a new endpoint to the same receiver as
	// a running one that stops waits for before it sends, so that each
	// series arrives in order; swapEndpoints closes it once they stopped.
	replaced := map[string]chan struct{}{}
	for _, rw := range cfg.RemoteWrite {
		if kept[rw.Name] {
			continue
		}
		for _, old := range a.endpoints {
			if old.cfg.URL == rw.URL && !kept[old.cfg.Name] && replaced[rw.URL] == nil {
				replaced[rw.URL] = make(chan struct{})
			}
		}
	}
	for _, rw := range cfg.RemoteWrite {
		if kept[rw.Name] {
			continue
		}
		a.handOverDisk(rw.DiskBuffer.Directory, kept, handedOver)
		e, err := a.newEndpoint(rw, md, replaced[rw.URL])
		if err != nil {
			for _, e := range fresh {
				e.q.Close()
			}
			a.restartHandedOver(handedOver)
			return a.reloaded(nil, &RefusedError{Err: fmt.Errorf("remote_write %q: %w", rw.Name, err)})
		}
		fresh[rw.Name] = e
	}

	a.swapEndpoints(cfg, fresh, handedOver, replaced)
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
		a.restartTicker(cfg.SnapshotInterval)
	}
	a.cfg = cfg
	a.reloadKubelet(cfg)
	a.interval.Store(int64(cfg.SnapshotInterval))
	a.refresh()
	return a.reloaded(&d, nil)
}
