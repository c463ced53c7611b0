package kubelet

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Store keeps the series of every node and path; the agent's series map
// implements it, so that the series go out with every snapshot.
type Store interface {
	// Set replaces the series kept under key; nil removes them. Series
	// that were kept and are no longer get a staleness marker in the next
	// snapshot. The store keeps set, which is never modified afterwards.
	Set(key types.UID, set *encode.SeriesSet)
}

// Node is what a read needs to know of a node.
type Node struct {
	// UID identifies the node object.
	UID types.UID
	// Name is the node's name, the node label.
	Name string
	// Address is the node's first address of the configured types
	// (direct mode).
	Address string
	// Port is status.daemonEndpoints.kubeletEndpoint.Port.
	Port int32
}

// NodeOf returns what a read needs of a node object: its address is the
// first of status.addresses whose type comes first in types.
func NodeOf(n *v1.Node, types []string) Node {
	out := Node{UID: n.UID, Name: n.Name, Port: n.Status.DaemonEndpoints.KubeletEndpoint.Port}
	for _, t := range types {
		for _, a := range n.Status.Addresses {
			if string(a.Type) == t && a.Address != "" {
				out.Address = a.Address
				return out
			}
		}
	}
	return out
}

// NodeOf returns what a read of the source needs of a node object, with
// the address of the section's address_types.
func (s *Source) NodeOf(n *v1.Node) Node { return NodeOf(n, s.cfg.AddressTypes) }

// instance is the instance label, the kubelet's address as Prometheus'
// endpoints discovery gives it.
func (n Node) instance() string {
	return net.JoinHostPort(n.Address, strconv.Itoa(int(n.Port)))
}

// Options are what a Source needs beyond its Config.
type Options struct {
	// Reader reads one path of one node (NewDirectReader, NewProxyReader).
	Reader Reader
	// Store keeps the series.
	Store Store
	// Metrics are the self-metrics (NewMetrics).
	Metrics *Metrics
	// Logger receives the logs.
	Logger *slog.Logger
	// ExternalLabels are added to every series that lacks them.
	ExternalLabels []encode.Label
}

// Source reads every known node's kubelet paths each interval.
type Source struct {
	// cfg is the validated kubelet section.
	cfg Config
	// o are the options.
	o Options
	// sem bounds the reads that run at once.
	sem chan struct{}
	// renderers are reused between reads (their scratch space grows to
	// the largest body), one per read running.
	renderers sync.Pool
	// added wakes Run when a node is added, to read it at once rather
	// than an interval later (the nodes' initial list comes after Run's
	// first tick).
	added chan struct{}
	// external are the external labels; a reload replaces them.
	external atomic.Pointer[[]encode.Label]

	// mu guards nodes and each nodeState's node and busy; Store.Set is
	// called under it, so that a read finishing as its node is deleted
	// cannot store the node's series again after the delete ended them.
	mu sync.Mutex
	// nodes are the nodes to read, by UID.
	nodes map[types.UID]*nodeState
}

// nodeState is one node being read.
type nodeState struct {
	// node is the node as last seen.
	node Node
	// gone is closed when the node is deleted: its read stops and stores
	// nothing.
	gone chan struct{}
	// busy is set while a read of the node runs; a tick skips a busy
	// node, so that a slow node never piles up reads. Guarded by
	// Source.mu.
	busy bool
	// fresh is set until the node's first read starts, which does not
	// wait for the next interval. Guarded by Source.mu.
	fresh bool
}

// New builds a Source; Run starts it.
func New(cfg Config, o Options) *Source {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{cfg: cfg, o: o, sem: make(chan struct{}, cfg.Concurrency), nodes: map[types.UID]*nodeState{}, added: make(chan struct{}, 1)}
	s.renderers.New = func() any { return newRenderer() }
	if cfg.UnverifiedToken() {
		o.Logger.Warn("sending the kubelet token over connections whose certificate is not verified: whoever answers on a node's address gets it (allow_token_over_unverified_connection)",
			"scheme", cfg.Scheme, "insecure_skip_verify", cfg.TLSConfig.InsecureSkipVerify, "bearer_token_file", cfg.BearerTokenFile)
	}
	s.SetExternalLabels(o.ExternalLabels)
	return s
}

// SetExternalLabels replaces the external labels; the next read of each
// node carries them (a reload of external_labels).
func (s *Source) SetExternalLabels(ls []encode.Label) {
	ls = slices.Clone(ls)
	s.external.Store(&ls)
}

// Upsert adds a node or updates its address.
func (s *Source) Upsert(n Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.nodes[n.UID]; ok {
		st.node = n
		return
	}
	s.nodes[n.UID] = &nodeState{node: n, gone: make(chan struct{}), fresh: true}
	s.o.Metrics.addNode(n.Name, s.cfg.Paths)
	select {
	case s.added <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Delete forgets a node: its series get staleness markers in the next
// snapshot, and a read of it still running stores nothing.
func (s *Source) Delete(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(uid)
}

func (s *Source) deleteLocked(uid types.UID) {
	st, ok := s.nodes[uid]
	if !ok {
		return
	}
	delete(s.nodes, uid)
	close(st.gone)
	for i := range s.cfg.Paths {
		s.o.Store.Set(key(uid, s.cfg.Paths[i].Path), nil)
	}
	s.o.Metrics.deleteNode(st.node.Name, s.cfg.Paths)
}

// Replace makes nodes the whole list: the others are deleted.
func (s *Source) Replace(nodes []Node) {
	keep := make(map[types.UID]bool, len(nodes))
	for _, n := range nodes {
		keep[n.UID] = true
		s.Upsert(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid := range s.nodes {
		if !keep[uid] {
			s.deleteLocked(uid)
		}
	}
}

// key is a node's path's key in the store.
func key(uid types.UID, path string) types.UID { return uid + types.UID(path) }

// Run reads every node each interval until ctx ends, and waits for the
// reads it started.
func (s *Source) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	all := true
	for {
		s.start(ctx, &wg, all)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			all = true
		case <-s.added:
			all = false
		}
	}
}

// tick starts a read of every node that is not still being read.
func (s *Source) tick(ctx context.Context, wg *sync.WaitGroup) { s.start(ctx, wg, true) }

// start starts a read of every node not still being read (all), or of
// the nodes never read yet.
func (s *Source) start(ctx context.Context, wg *sync.WaitGroup, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.nodes {
		if !all && !st.fresh {
			continue
		}
		if st.busy {
			s.o.Metrics.skipped.WithLabelValues(st.node.Name).Inc()
			continue
		}
		st.busy, st.fresh = true, false
		n := st.node
		wg.Go(func() {
			defer func() { s.mu.Lock(); st.busy = false; s.mu.Unlock() }()
			select {
			case s.sem <- struct{}{}:
			case <-ctx.Done():
				return
			case <-st.gone:
				return
			}
			defer func() { <-s.sem }()
			s.readNode(ctx, n, st.gone)
		})
	}
}

// readNode reads every path of a node, one after the other, and stores
// each result unless the node was deleted meanwhile.
func (s *Source) readNode(ctx context.Context, n Node, gone <-chan struct{}) {
	r := s.renderers.Get().(*renderer)
	defer s.renderers.Put(r)
	// A read of a node deleted meanwhile ends at once, freeing its slot.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-gone:
			cancel()
		case <-rctx.Done():
		}
	}()
	for i := range s.cfg.Paths {
		p := &s.cfg.Paths[i]
		set, res := s.readPath(rctx, r, n, p)
		if ctx.Err() != nil {
			return // stopping: keep what was read last
		}
		s.mu.Lock()
		select {
		case <-gone:
			// Deleted meanwhile: neither its series nor its self-metrics
			// come back.
			s.mu.Unlock()
			return
		default:
		}
		s.o.Store.Set(key(n.UID, p.Path), set)
		s.o.Metrics.observe(n.Name, p.Path, res)
		s.mu.Unlock()
	}
}

// readPath reads one path and returns its series, with an up series as
// Prometheus adds to a scrape: 1 and the samples on success; 0 alone on
// failure, so that the path's other series get staleness markers, as a
// failed scrape gives them in Prometheus.
func (s *Source) readPath(ctx context.Context, r *renderer, n Node, p *PathConfig) (*encode.SeriesSet, readResult) {
	start := time.Now()
	t := s.target(n, p, start)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	body, err := s.o.Reader.Read(rctx, n, p.Path)
	cancel()
	set := &r.set
	var counts renderCounts
	if err == nil {
		set, counts, err = r.render(body, t, start.UnixMilli())
	}
	took := time.Since(start)
	up := 1.0
	if err != nil {
		if ctx.Err() == nil {
			s.o.Logger.Debug("reading kubelet", "node", n.Name, "path", p.Path, "err", err)
		}
		set.Reset()
		up = 0
	}
	res := readResult{took: took, samples: len(set.Refs), counts: counts, err: err}
	r.b.SetExternal(nil)
	r.b.Reset()
	r.b.Add(encode.MetricName, "up")
	for _, l := range t.owned {
		r.b.Add(l.Name, l.Value)
	}
	for _, l := range t.honored {
		r.b.Add(l.Name, l.Value)
	}
	r.b.AppendTo(set, up)
	set.Timestamps = append(set.Timestamps, start.UnixMilli())
	c := r.compact.Compact(set)
	return &c, res
}

// readResult is what the self-metrics record of one read.
type readResult struct {
	took time.Duration
	// samples are the samples kept.
	samples int
	// counts are the samples not kept, by why.
	counts renderCounts
	// err is why the read failed, or nil.
	err error
}

// target returns what a read of a node's path started at start depends
// on besides the body.
func (s *Source) target(n Node, p *PathConfig, start time.Time) *target {
	owned := s.targetLabels(n, p.Path)
	for _, l := range *s.external.Load() {
		if !slices.ContainsFunc(owned, func(o encode.Label) bool { return o.Name == l.Name }) {
			owned = append(owned, l)
		}
	}
	t := &target{path: p, cfg: &s.cfg, owned: owned, minT: math.MinInt64, maxT: math.MaxInt64}
	if s.cfg.MaxSampleAge > 0 {
		t.minT = start.Add(-s.cfg.MaxSampleAge).UnixMilli()
	}
	if s.cfg.MaxSampleFuture > 0 {
		t.maxT = start.Add(s.cfg.MaxSampleFuture).UnixMilli()
	}
	for _, k := range slices.Sorted(maps.Keys(s.cfg.TargetLabels)) {
		t.honored = append(t.honored, encode.Label{Name: k, Value: s.cfg.TargetLabels[k]})
	}
	return t
}

// targetLabels are the labels kube-prometheus-stack's kubelet job gives
// every series of a node's path: job, metrics_path, node and instance.
func (s *Source) targetLabels(n Node, path string) []encode.Label {
	return []encode.Label{
		{Name: "job", Value: s.cfg.Job},
		{Name: "metrics_path", Value: path},
		{Name: "node", Value: n.Name},
		{Name: "instance", Value: n.instance()},
	}
}
