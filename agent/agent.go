package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/leader"
	"github.com/kube-state-push/kube-state-push/pull"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Version is the agent's version, set at build time.
var Version = "dev"

// Options are what an Agent needs beyond its configuration.
type Options struct {
	// Logger receives every log line.
	Logger *slog.Logger
	// Clients reach the API server; nil builds them from the config.
	Clients *watch.Clients
	// Registry collects the self-metrics; nil makes a new one.
	Registry *prometheus.Registry
	// ConfigFile is the file the configuration was loaded from, which
	// Reload reads again; empty: reloads are refused.
	ConfigFile string
	// EnableLifecycle serves the state-changing endpoints (POST /-/reload),
	// as Prometheus' --web.enable-lifecycle; without it they answer 403.
	EnableLifecycle bool
	// EnablePprof serves Go's profiles under /debug/pprof/ on
	// listen_address. Off by default: a profile or trace costs CPU for as
	// long as the caller asks, and the heap profile shows what the process
	// holds.
	EnablePprof bool
	// WebConfigFile is an exporter-toolkit web configuration (TLS, client
	// certificates, basic auth) for the whole listener, as
	// --web.config.file of kube-state-metrics and node_exporter; empty:
	// plain HTTP.
	WebConfigFile string
	// PodName and PodNamespace name the agent's pod for auto_sharding;
	// empty: the POD_NAME and POD_NAMESPACE environment variables.
	PodName, PodNamespace string
}

// Agent watches a cluster and pushes its state.
type Agent struct {
	// cfg is the running configuration; a reload replaces it (only on the
	// snapshot goroutine, as every field below that a reload changes).
	cfg *config.Config
	// configFile is read again by Reload.
	configFile string
	// log receives the agent's logs.
	log *slog.Logger
	// clients reach the API server.
	clients watch.Clients
	// reg holds every self-metric; metrics, queueMetrics and reloadMetrics
	// are registered there once, for what reloads build too.
	reg           *prometheus.Registry
	metrics       *metrics
	queueMetrics  *queue.Metrics
	reloadMetrics *reloadMetrics
	// groups are the watched resources, in the order of resources.
	groups []*watchGroup
	// pending holds, by resource, the groups a reload started to replace
	// one of groups; each takes over once its initial list is stored.
	pending map[string]*watchGroup
	// retiring are series maps whose series all get a staleness marker in
	// the next snapshot (reload.go); then they are dropped.
	retiring []*seriesMap
	// readyMaps are the maps of groups, for Ready, which the HTTP server
	// calls from its own goroutines.
	readyMaps atomic.Pointer[[]*seriesMap]
	// watchCtx is the context the reflectors run in, set by Run.
	watchCtx context.Context
	// autoShard and autoTotal are the shard and shard count auto_sharding
	// found, at start and since (reshard.go); pod and podNamespace name the
	// pod it finds them for.
	autoShard, autoTotal int
	pod, podNamespace    string
	// replicas carries the StatefulSet's latest replica count to Run's
	// loop; resharding is set while a new shard count waits for its
	// initial lists, which reshardPoll checks.
	replicas    chan int
	resharding  bool
	reshardPoll *time.Ticker
	// endpoints send the samples.
	endpoints []*endpoint
	// draining tracks endpoints a reload stopped that deliver their queue
	// in the background; drainErrs, guarded by drainMu, are their losses,
	// and forget, also guarded by drainMu, the names of those a reload
	// removed, whose self-metrics the next snapshot deletes.
	draining  sync.WaitGroup
	drainMu   sync.Mutex
	drainErrs []error
	forget    []string
	// snap takes the snapshots; ticker times them, and nextTick (Unix
	// nanoseconds, 0 before the first) is when it is next due, for the
	// API server connections' read batching (watch.ReadBatching).
	snap     *snapshotter
	ticker   *time.Ticker
	nextTick atomic.Int64
	// interval is snapshot_interval (a time.Duration), which the endpoints
	// read from their goroutines (pendingFrames).
	interval atomic.Int64
	// reloads hands loaded configurations to Run's loop; loopDone is
	// closed when the loop has ended.
	reloads  chan reloadRequest
	loopDone chan struct{}
	// listener serves /metrics and the probes, when configured.
	listener net.Listener
	// pullListener serves the state series for scraping (package pull),
	// when configured; pullView is what its scrapes read, published by
	// refresh.
	pullListener net.Listener
	pullView     atomic.Pointer[pull.View]
	pullHandler  *pull.Handler
	// lifecycle serves the state-changing endpoints (Options.EnableLifecycle).
	lifecycle bool
	pprof     bool
	// webConfigFile secures the listener (Options.WebConfigFile).
	webConfigFile string
	// custom watches the CRDs for custom_resource_state
	// (customresources.go).
	custom *customResources
	// leader runs the leader election, when enabled (nil otherwise); gate
	// then lets only the leader's snapshots reach the endpoints.
	leader *leader.Election
	gate   *gate
	// kubelet reads the kubelets (kubelet.go), when configured.
	kubelet *kubeletSource
}

// New builds an agent from a validated configuration. It opens the
// self-metrics listener (so a busy port fails here, not later) but starts
// nothing else.
func New(cfg *config.Config, o Options) (*Agent, error) {
	// A bad web configuration fails the start, not the first request.
	if err := web.Validate(o.WebConfigFile); err != nil {
		return nil, fmt.Errorf("web configuration %s: %w", o.WebConfigFile, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	a := &Agent{
		cfg: cfg, configFile: o.ConfigFile, log: o.Logger, reg: o.Registry,
		lifecycle: o.EnableLifecycle, pprof: o.EnablePprof, webConfigFile: o.WebConfigFile,
		pending: map[string]*watchGroup{}, reloads: make(chan reloadRequest), loopDone: make(chan struct{}),
		pod: o.PodName, podNamespace: o.PodNamespace, replicas: make(chan int, 1),
	}
	if a.pod == "" {
		a.pod = os.Getenv("POD_NAME")
	}
	if a.podNamespace == "" {
		a.podNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.Clients != nil {
		a.clients = *o.Clients
	} else {
		rc, err := watch.RESTConfig(cfg.Watch.Kubeconfig, cfg.Watch.KubeAPICompression)
		if err != nil {
			return nil, err
		}
		batching := watch.ReadBatching{Window: cfg.ReadBatching(), NextTick: a.nextTickDue}
		if a.clients, err = watch.NewClients(rc, "kube-state-push/"+Version, batching); err != nil {
			return nil, err
		}
	}
	a.metrics = newMetrics(a.reg)
	a.queueMetrics = queue.NewMetrics(a.reg)
	a.reloadMetrics = newReloadMetrics(a.reg)
	a.custom = newCustomResources(a.reg)
	a.custom.wanted.Store(cfg.CustomResourceState != nil)
	a.pullHandler = pull.NewHandler(a.pullView.Load, cfg.Pull.MaxConcurrentScrapes, a.reg)
	var err error
	if a.kubelet, err = a.newKubelet(cfg); err != nil {
		return nil, err
	}
	// The shard is final once Run has resolved auto-sharding (shard).
	shard, total := a.sharding(cfg)
	for _, name := range cfg.Watch.Resources {
		r, ok := watch.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown resource %q", name)
		}
		g := newGroup(cfg, r, groupKey(cfg, r, shard, total), nil, a.metrics, a.log)
		a.teeNodes(g)
		a.groups = append(a.groups, g)
	}
	a.snap = &snapshotter{metrics: a.metrics}
	a.interval.Store(int64(cfg.SnapshotInterval))
	if cfg.PushSelfMetrics {
		a.snap.self = newSelfPush(a.reg, externalLabels(cfg.ExternalLabels), a.log)
	}
	md := familyMetadata(cfg)
	for _, rw := range cfg.RemoteWrite {
		e, err := a.newEndpoint(rw, md, nil)
		if err != nil {
			return nil, err
		}
		a.endpoints = append(a.endpoints, e)
	}
	if cfg.LeaderElection.Enabled {
		var err error
		if a.leader, err = leader.New(cfg.LeaderElection, a.clients.Kube, a.reg, a.log); err != nil {
			return nil, err
		}
		a.gate = &gate{}
		a.snap.hold = func() bool { return !a.gate.open.Load() }
	}
	a.refresh()
	if cfg.ListenAddress != "" {
		l, err := net.Listen("tcp", cfg.ListenAddress)
		if err != nil {
			return nil, fmt.Errorf("listening on listen_address %s: %w", cfg.ListenAddress, err)
		}
		a.listener = l
	}
	if cfg.Pull.ListenAddress != "" {
		l, err := net.Listen("tcp", cfg.Pull.ListenAddress)
		if err != nil {
			if a.listener != nil {
				_ = a.listener.Close()
			}
			return nil, fmt.Errorf("listening on pull.listen_address %s: %w", cfg.Pull.ListenAddress, err)
		}
		a.pullListener = l
	}
	return a, nil
}

// PullAddr is the address the state series are served on for scraping
// (pull.listen_address), or nil.
func (a *Agent) PullAddr() net.Addr {
	if a.pullListener == nil {
		return nil
	}
	return a.pullListener.Addr()
}

// Addr is the address the self-metrics server listens on, or nil.
func (a *Agent) Addr() net.Addr {
	if a.listener == nil {
		return nil
	}
	return a.listener.Addr()
}

// Ready reports whether every resource's initial list has been stored.
func (a *Agent) Ready() bool {
	if !a.customReady() {
		return false
	}
	for _, m := range *a.readyMaps.Load() {
		if !m.synced.Load() {
			return false
		}
	}
	return true
}

// Run watches and pushes until ctx ends, then stops in two phases: stop the
// reflectors and take a final snapshot; then flush the queues within
// shutdown_timeout. Between snapshots it applies reloads (reload.go). It
// returns an error if samples were dropped at stop, or by an endpoint a
// reload stopped.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.shard(ctx); err != nil {
		return err
	}
	servers := a.serve()
	for _, e := range a.endpoints {
		e.start()
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	a.watchCtx = watchCtx
	for _, g := range a.groups {
		g.start(watchCtx, a.clients)
	}
	if a.kubelet != nil {
		a.kubelet.start(watchCtx)
	}
	a.customResources(a.cfg) // starts the CRD discovery, if configured
	a.log.Info("watching", "resources", a.cfg.Watch.Resources, "endpoints", len(a.endpoints), "interval", a.cfg.SnapshotInterval)
	stopElection := a.elect(ctx)

	a.restartTicker(a.cfg.SnapshotInterval)
	leaderPoll := a.pollLeadership()
	readyPoll := time.NewTicker(firstSnapshotPoll(a.cfg.SnapshotInterval))
	defer readyPoll.Stop()
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-readyPoll.C:
			if a.Ready() {
				readyPoll.Stop()
				n := a.snapshot(time.Now())
				a.restartTicker(a.cfg.SnapshotInterval)
				a.log.Info("initial lists stored: took the first snapshot", "samples", n)
			}
		case t := <-a.ticker.C:
			readyPoll.Stop()
			a.nextTick.Store(t.Add(a.cfg.SnapshotInterval).UnixNano())
			n := a.snapshot(t)
			a.log.Debug("snapshot queued", "samples", n, "took", time.Since(t))
		case <-leaderPoll:
			a.takeOver()
		case req := <-a.reloads:
			req.result <- a.apply(req.cfg)
		case <-a.customChanged():
			a.syncCustom()
		case total := <-a.replicas:
			a.reshard(total)
		case <-a.reshardDue():
			a.reshardDone()
		}
	}
	close(a.loopDone)
	a.ticker.Stop()

	// Phase 1: stop watching; the last snapshot carries the final state.
	// Replacements still waiting for their initial list are dropped.
	stopWatch()
	for _, g := range a.groups {
		g.stop()
	}
	a.stopCustom()
	if a.kubelet != nil {
		<-a.kubelet.done // reads end with watchCtx
	}
	for name := range a.pending {
		a.dropPending(name)
	}
	// A shutdown context of its own: ctx is already cancelled.
	stopCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	a.openGate()
	n := a.snap.tick(time.Now())
	stopElection(stopCtx)
	a.log.Info("stopping: final snapshot queued, flushing", "samples", n, "deadline", a.cfg.ShutdownTimeout)

	// Phase 2: flush within the deadline; then what is left is dropped.
	var errs []error
	// Every endpoint at once, each within the same deadline: one that
	// cannot deliver does not eat into another's time.
	stopErrs := make([]error, len(a.endpoints))
	var wg sync.WaitGroup
	for i, e := range a.endpoints {
		wg.Go(func() { stopErrs[i] = e.stop(stopCtx) })
	}
	wg.Wait()
	errs = append(errs, stopErrs...)
	a.draining.Wait() // each within its own deadline
	a.drainMu.Lock()
	errs = append(errs, a.drainErrs...)
	a.drainMu.Unlock()
	for _, srv := range servers {
		shutCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(shutCtx)
		c()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	a.log.Info("stopped")
	return nil
}

// firstSnapshotPoll is how often the loop checks, until the first snapshot,
// whether every initial list is in: the first snapshot is taken then, not
// a whole snapshot_interval after start.
func firstSnapshotPoll(interval time.Duration) time.Duration {
	return min(max(interval/20, 10*time.Millisecond), 250*time.Millisecond)
}

// pollLeadership returns a channel that ticks a few times per retry_period
// while leader election is on (nil otherwise, which never ticks), for
// takeOver. client-go tells a new leader through a callback on a goroutine
// of its own; polling keeps the snapshot goroutine the only one to take
// snapshots.
func (a *Agent) pollLeadership() <-chan time.Time {
	if a.leader == nil {
		return nil
	}
	t := time.NewTicker(max(a.cfg.LeaderElection.RetryPeriod/4, 10*time.Millisecond))
	go func() { <-a.loopDone; t.Stop() }()
	return t.C
}

// takeOver takes a snapshot at once when this replica has just become the
// leader (the gate is still closed from its last snapshot as a follower),
// rather than at the next tick, which may be a whole snapshot_interval
// away: after a leader dies, the gap at the receiver is then about the
// Lease's expiry, not that plus an interval. The ticker restarts from here.
func (a *Agent) takeOver() {
	if a.gate.open.Load() || !a.leader.Leading() {
		return
	}
	n := a.snapshot(time.Now())
	a.restartTicker(a.cfg.SnapshotInterval)
	a.log.Info("leading: took a snapshot at once", "samples", n)
}

// restartTicker starts the ticker, or restarts it, with period d from now,
// and notes when it is next due.
func (a *Agent) restartTicker(d time.Duration) {
	if a.ticker == nil {
		a.ticker = time.NewTicker(d)
	} else {
		a.ticker.Reset(d)
	}
	a.nextTick.Store(time.Now().Add(d).UnixNano())
}

// nextTickDue is when the next snapshot is due; zero before the ticker
// runs. Safe for concurrent use.
func (a *Agent) nextTickDue() time.Time {
	if n := a.nextTick.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// serve starts the self-metrics and probe server and the pull server, those
// configured.
func (a *Agent) serve() []*http.Server {
	var servers []*http.Server
	if a.listener != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}))
		mux.HandleFunc("/-/reload", lifecycleOnly(a.lifecycle, a.handleReload))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok\n"))
		})
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !a.Ready() {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("waiting for the initial list of every resource\n"))
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		if a.pprof {
			// Go's profiles, as Prometheus serves them on its web port,
			// so that memory and CPU are profiled where the agent runs.
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		timeouts := metricsTimeouts
		if a.pprof {
			timeouts = pprofTimeouts
		}
		servers = append(servers, a.serveOn(a.listener, timeouts.server(mux), "self-metrics"))
	}
	if a.pullListener != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", a.pullHandler)
		servers = append(servers, a.serveOn(a.pullListener, pullTimeouts.server(mux), "pull"))
	}
	return servers
}

// serveOn serves srv on l until the server is shut down. exporter-toolkit
// adds TLS and basic auth from the web configuration, read again on each
// connection; without one it serves plain HTTP.
func (a *Agent) serveOn(l net.Listener, srv *http.Server, what string) *http.Server {
	go func() {
		flags := &web.FlagConfig{WebConfigFile: &a.webConfigFile}
		if err := web.Serve(l, srv, flags, a.log); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error(what+" server stopped", "err", err)
		}
	}()
	return srv
}
