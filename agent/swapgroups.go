package agent

import (
	"slices"
	"time"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/pull"
	"github.com/kube-state-push/kube-state-push/watch"
)

// The watched resources across reloads: groups started, replaced once
// their replacement holds its initial list, and retired with staleness
// markers; and the snapshot that promotes them.

// swapGroups makes the watched resources cfg's: it starts the groups of new
// resources, and replacements (pending until their initial list is stored)
// for resources whose key changed, and retires the groups of resources no
// longer watched.
func (a *Agent) swapGroups(cfg *config.Config) {
	shard, total := a.sharding(cfg)
	a.metrics.setSharding(shard, total)
	owns := (&watch.Config{Shard: shard, TotalShards: total}).Owner()
	active := map[string]*watchGroup{}
	for _, g := range a.groups {
		active[g.resource.Name] = g
	}
	groups := make([]*watchGroup, 0, len(cfg.Watch.Resources))
	for _, r := range a.resources(cfg) { // customresources.go
		name := r.Name
		key := groupKey(cfg, r, shard, total)
		g := active[name]
		delete(active, name)
		switch {
		case g == nil:
			g = newGroup(cfg, r, key, owns, a.metrics, a.log)
			a.teeNodes(g)
			g.start(a.watchCtx, a.clients)
		case g.key == key:
			a.dropPending(name)
		case a.pending[name] == nil || a.pending[name].key != key:
			a.dropPending(name)
			p := newGroup(cfg, r, key, owns, a.metrics, a.log)
			a.teeNodes(p)
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

// refresh hands the running groups, retired maps and endpoints to the
// snapshotter and the readiness probe.
func (a *Agent) refresh() {
	var maps []*seriesMap
	for _, g := range a.groups {
		maps = append(maps, g.maps...)
	}
	ready := slices.Clone(maps)
	a.readyMaps.Store(&ready)
	a.pullView.Store(a.newPullView())
	a.snap.maps = append(maps, a.retiring...)
	if a.kubelet != nil {
		a.snap.maps = append(a.snap.maps, a.kubelet.m)
	}
	sinks := make([]frameSink, len(a.endpoints))
	for i, e := range a.endpoints {
		sinks[i] = e.q
	}
	a.snap.sinks = sinks
}

// newPullView builds what the pull page's scrapes read from the current
// groups.
func (a *Agent) newPullView() *pull.View {
	v := &pull.View{External: externalLabels(a.cfg.ExternalLabels)}
	for _, g := range a.groups {
		maps := make([]pull.Source, len(g.maps))
		for i, m := range g.maps {
			maps[i] = m
		}
		v.Groups = append(v.Groups, pull.Group{Resource: g.resource.Name, Families: g.families, Maps: maps})
	}
	return v
}

// sharding returns the shard and shard count cfg renders with: its own, or
// with auto_sharding those of the StatefulSet's replicas (reshard.go).
func (a *Agent) sharding(cfg *config.Config) (shard, total int) {
	if cfg.Watch.AutoSharding {
		return a.autoShard, a.autoTotal
	}
	return cfg.Watch.Shard, cfg.Watch.TotalShards
}
