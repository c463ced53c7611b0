package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Version is the agent's version, set at build time.
var Version = "dev"

// watchSpec is one reflector: a resource in a scope, and its store.
type watchSpec struct {
	resource *watch.Resource
	scope    watch.Scope
	store    *seriesMap
}

// Options are what an Agent needs beyond its Config.
type Options struct {
	// Logger receives every log line.
	Logger *slog.Logger
	// Clients reach the API server; nil builds them from the config.
	Clients *watch.Clients
	// Registry collects the self-metrics; nil makes a new one.
	Registry *prometheus.Registry
}

// Agent watches a cluster and pushes its state.
type Agent struct {
	// cfg is the validated configuration.
	cfg *Config
	// log receives the agent's logs.
	log *slog.Logger
	// clients reach the API server.
	clients watch.Clients
	// reg holds every self-metric.
	reg *prometheus.Registry
	// watches are the reflectors to run, one per resource and scope, each
	// with its series map.
	watches []watchSpec
	maps    []*seriesMap
	// endpoints send the samples.
	endpoints []*queue.Endpoint
	// snap takes the snapshots.
	snap *snapshotter
	// listener serves /metrics and the probes, when configured.
	listener net.Listener
	// leader runs the leader election, when enabled (nil otherwise); gate
	// then lets only the leader's snapshots reach the endpoints.
	leader *leader
	gate   *gate
}

// New builds an agent from a validated configuration. It opens the
// self-metrics listener (so a busy port fails here, not later) but starts
// nothing else.
func New(cfg *Config, o Options) (*Agent, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	a := &Agent{cfg: cfg, log: o.Logger, reg: o.Registry}
	if o.Clients != nil {
		a.clients = *o.Clients
	} else {
		rc, err := watch.RESTConfig(cfg.Watch.Kubeconfig)
		if err != nil {
			return nil, err
		}
		if a.clients, err = watch.NewClients(rc, "kube-state-push/"+Version); err != nil {
			return nil, err
		}
	}
	m := newMetrics(a.reg)
	ext := externalLabels(cfg.ExternalLabels)
	for _, name := range cfg.Watch.Resources {
		r, ok := watch.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("unknown resource %q", name)
		}
		rm := m.forResource(name)
		for _, sc := range cfg.Watch.Scopes(r) {
			// A renderer per reflector: renderers keep scratch space.
			rr := r.NewRenderer(watch.RenderOptions{
				Families:       cfg.Watch.FamilyOptions(name),
				Select:         cfg.Watch.Selected,
				ExternalLabels: ext,
			})
			sm := newSeriesMap(name, rr, a.log.With("scope", sc.String()), rm)
			a.watches = append(a.watches, watchSpec{resource: r, scope: sc, store: sm})
			a.maps = append(a.maps, sm)
		}
	}
	qm := queue.NewMetrics(a.reg)
	a.snap = &snapshotter{maps: a.maps, metrics: m}
	if cfg.PushSelfMetrics {
		a.snap.self = newSelfPush(a.reg, ext, a.log)
	}
	md := familyMetadata(cfg)
	for _, rw := range cfg.RemoteWrite {
		e, err := queue.New(rw, queue.Options{Logger: a.log, Metrics: qm, UserAgent: "kube-state-push/" + Version, Metadata: md})
		if err != nil {
			return nil, err
		}
		a.endpoints = append(a.endpoints, e)
		a.snap.endpoints = append(a.snap.endpoints, e)
	}
	if cfg.LeaderElection.Enabled {
		var err error
		if a.leader, err = newLeader(cfg.LeaderElection, a.clients.Kube, a.reg, a.log); err != nil {
			return nil, err
		}
		a.gate = &gate{}
		a.snap.endpoints = a.gate.wrap(a.snap.endpoints)
	}
	if cfg.ListenAddress != "" {
		l, err := net.Listen("tcp", cfg.ListenAddress)
		if err != nil {
			return nil, fmt.Errorf("listening on listen_address %s: %w", cfg.ListenAddress, err)
		}
		a.listener = l
	}
	return a, nil
}

func externalLabels(m map[string]string) []encode.Label {
	var ls []encode.Label
	for k, v := range m {
		ls = append(ls, encode.Label{Name: k, Value: v})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return ls
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
	for _, m := range a.maps {
		if !m.synced.Load() {
			return false
		}
	}
	return true
}

// Run watches and pushes until ctx ends, then stops in two phases: stop the
// reflectors and take a final snapshot; then flush the queues within
// shutdown_timeout. It returns an error if samples were dropped at stop.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.shard(ctx); err != nil {
		return err
	}
	srv := a.serve()
	for _, e := range a.endpoints {
		e.Start()
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	var reflectors sync.WaitGroup
	for _, w := range a.watches {
		rf := w.resource.NewReflector(a.clients, w.scope.Namespace, w.scope.FieldSelector, w.store)
		reflectors.Add(1)
		go func() {
			defer reflectors.Done()
			rf.RunWithContext(watchCtx)
		}()
	}
	a.log.Info("watching", "resources", a.cfg.Watch.Resources, "endpoints", len(a.endpoints), "interval", a.cfg.SnapshotInterval)
	stopElection := a.elect(ctx)

	ticker := time.NewTicker(a.cfg.SnapshotInterval)
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case t := <-ticker.C:
			a.openGate()
			n := a.snap.tick(ctx, t)
			a.log.Debug("snapshot queued", "samples", n, "took", time.Since(t))
		}
	}
	ticker.Stop()

	// Phase 1: stop watching; the last snapshot carries the final state.
	stopWatch()
	reflectors.Wait()
	// A shutdown context of its own: ctx is already cancelled.
	stopCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	a.openGate()
	n := a.snap.tick(stopCtx, time.Now())
	stopElection(stopCtx)
	a.log.Info("stopping: final snapshot queued, flushing", "samples", n, "deadline", a.cfg.ShutdownTimeout)

	// Phase 2: flush within the deadline; then what is left is dropped.
	var errs []error
	for _, e := range a.endpoints {
		if err := e.Stop(stopCtx); err != nil {
			errs = append(errs, err)
		}
	}
	if srv != nil {
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

// shard sets which objects the series maps render, resolving auto-sharding
// first. It runs before the reflectors start, which then read the predicate
// without a lock.
func (a *Agent) shard(ctx context.Context) error {
	w := a.cfg.Watch // a copy: the caller's configuration stays as written
	if w.AutoSharding {
		shard, total, err := watch.ShardFromStatefulSet(ctx, a.clients.Kube, os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"))
		if err != nil {
			return err
		}
		w.Shard, w.TotalShards = shard, total
	}
	owns := w.Owner()
	for _, m := range a.maps {
		m.owns = owns
	}
	if owns != nil {
		a.log.Info("sharding", "shard", w.Shard, "total_shards", w.TotalShards, "auto", w.AutoSharding)
	}
	return nil
}

// serve starts the self-metrics and probe server, if configured.
func (a *Agent) serve() *http.Server {
	if a.listener == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{Registry: a.reg}))
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
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(a.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("self-metrics server stopped", "err", err)
		}
	}()
	return srv
}
