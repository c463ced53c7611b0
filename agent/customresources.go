package agent

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/customresource"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Custom resources (custom_resource_state) are watched groups like the
// built-in resources', in the same groups list, series maps, snapshots and
// queues; only which of them exist depends on the cluster. A discovery
// watches the CRDs; whenever what they serve changes, the snapshot
// goroutine resolves the configured kinds again and swaps the groups
// (swapGroups): a kind whose CRD appeared gets a group at once, one whose
// CRD went is retired, its series marked stale in the next snapshot. A
// configured kind that no CRD serves is reported (a self-metric and one
// log line) and affects nothing else.

// customResources is the agent's custom resource state.
type customResources struct {
	// disc watches the CRDs; nil until the configuration has
	// custom_resource_state. done is closed when it has stopped.
	disc *customresource.Discovery
	done chan struct{}
	// wanted is set once a configuration has custom_resource_state;
	// applied once the groups reflect the discovery's first list. Ready
	// reads both.
	wanted, applied atomic.Bool
	// mu guards reported.
	mu sync.Mutex
	// reported holds the configured kinds last reported missing.
	reported map[customresource.GroupVersionKind]bool
	// missing is 1 for a configured kind no CRD serves, 0 once one does.
	missing *prometheus.GaugeVec
	// valueErrors counts, by resource, the values that did not render
	// (kube-state-metrics logs each one).
	valueErrors *prometheus.CounterVec
}

func newCustomResources(reg prometheus.Registerer) *customResources {
	c := &customResources{
		reported: map[customresource.GroupVersionKind]bool{},
		missing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "custom_resource_missing",
			Help: "1 for a kind of custom_resource_state that no established CRD serves (not watched until one does), 0 once one does.",
		}, []string{"group", "version", "kind"}),
		valueErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "custom_resource_value_errors_total",
			Help: "Values of custom resources that did not render, by resource: not a number, a state that is not a string, a path that resolves to nothing without nilIsZero (kube-state-metrics logs each).",
		}, []string{"resource"}),
	}
	reg.MustRegister(c.missing, c.valueErrors)
	return c
}

// customResources returns the custom resources cfg watches now: none
// before the CRDs are listed. It starts the discovery the first time a
// configuration has custom_resource_state (from Run: watchCtx is set).
func (a *Agent) customResources(cfg *config.Config) []*watch.Resource {
	crs := cfg.CustomResourceState
	if crs == nil {
		// A reload took custom_resource_state out: nothing is missing.
		a.custom.missing.Reset()
		return nil
	}
	c := a.custom
	c.wanted.Store(true)
	if a.watchCtx == nil {
		return nil
	}
	if c.disc == nil {
		if a.clients.Dynamic == nil {
			if !c.applied.Swap(true) { // nothing to wait for: Ready does not
				a.log.Error("custom_resource_state: no dynamic client; custom resources are not watched")
			}
			return nil
		}
		c.disc, c.done = customresource.NewDiscovery(), make(chan struct{})
		go func() {
			defer close(c.done)
			c.disc.Run(a.watchCtx, a.clients.Dynamic)
		}()
	}
	if !c.disc.Synced() {
		return nil
	}
	crs.CountErrors(func(resource string, n int) { c.valueErrors.WithLabelValues(resource).Add(float64(n)) })
	rs, missing := crs.Resolve(c.disc.Served())
	c.report(crs, missing, a.log)
	return rs
}

// report sets the missing gauge of every configured kind and logs each
// that went missing, or was found, since the last report.
func (c *customResources) report(crs *customresource.Config, missing []customresource.GroupVersionKind, log *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := map[customresource.GroupVersionKind]bool{}
	for _, k := range missing {
		now[k] = true
		if !c.reported[k] {
			log.Warn("custom_resource_state: no established CRD serves this kind; it is watched once one does",
				"group", k.Group, "version", k.Version, "kind", k.Kind)
		}
	}
	for k := range c.reported {
		if !now[k] {
			log.Info("custom_resource_state: a CRD now serves this kind; watching it", "group", k.Group, "version", k.Version, "kind", k.Kind)
		}
	}
	c.reported = now
	c.missing.Reset()
	for _, r := range crs.Doc.Spec.Resources {
		k := r.GroupVersionKind
		v := 0.0
		if now[k] {
			v = 1
		}
		c.missing.WithLabelValues(k.Group, k.Version, k.Kind).Set(v)
	}
}

// customChanged receives when the CRDs changed (nil, which never
// receives, without a discovery).
func (a *Agent) customChanged() <-chan struct{} {
	if a.custom.disc == nil {
		return nil
	}
	return a.custom.disc.Changed()
}

// syncCustom swaps the groups for what the CRDs serve now; on the snapshot
// goroutine.
func (a *Agent) syncCustom() {
	a.swapGroups(a.cfg)
	a.refresh()
	if a.custom.disc != nil && a.custom.disc.Synced() {
		a.custom.applied.Store(true)
	}
}

// customReady reports whether the custom resources' groups exist (their
// maps' initial lists are then part of Ready).
func (a *Agent) customReady() bool {
	return !a.custom.wanted.Load() || a.custom.applied.Load()
}

// stopCustom waits for the discovery to stop once watchCtx is cancelled.
func (a *Agent) stopCustom() {
	if a.custom.done != nil {
		<-a.custom.done
	}
}

// resources returns the resources cfg watches: the built-in ones it names,
// then the custom resources served now.
func (a *Agent) resources(cfg *config.Config) []*watch.Resource {
	var rs []*watch.Resource
	for _, name := range cfg.Watch.Resources {
		if r, ok := watch.Lookup(name); ok { // Validate refuses unknown ones
			rs = append(rs, r)
		}
	}
	return append(rs, a.customResources(cfg)...)
}
