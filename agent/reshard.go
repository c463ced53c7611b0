package agent

import (
	"context"
	"time"

	"github.com/kube-state-push/kube-state-push/watch"
)

// Resharding in place. With auto_sharding the agent watches its own
// StatefulSet, and a change of spec.replicas changes the shard count
// without a restart, between two snapshots, as a reload of total_shards
// would (swapGroups): every resource gets a new group that lists the
// objects the new count gives this shard, and takes over once that list is
// stored.
//
// The handover between replicas is the point. An object that moves from
// shard A to shard B keeps the same series, with the same labels (no label
// says which replica pushed it), so B continues A's series at the receiver.
// A therefore sends no staleness marker for it: it stops sending it as soon
// as it sees the new count (handOff), and B starts as soon as its new list
// is stored, with a snapshot at once rather than at its next tick. Every
// replica sees the change within the API server's watch latency of the
// others, so the series misses at most the snapshot that falls between A's
// last and B's first, and A's last sample comes before B's first: no
// timestamp gets the series from both. Series that end for any other reason
// (an object deleted, a label value changed) get their markers as always.
// A replica whose ordinal is at or past the new count owns nothing and
// sends nothing; the StatefulSet controller then removes it.

// shard sets which objects the series maps render, resolving auto-sharding
// first and watching the StatefulSet's replicas from then on. It runs
// before the reflectors start.
func (a *Agent) shard(ctx context.Context) error {
	w := a.cfg.Watch // a copy: the caller's configuration stays as written
	if w.AutoSharding {
		shard, total, err := watch.ShardFromStatefulSet(ctx, a.clients.Kube, a.podNamespace, a.pod)
		if err != nil {
			return err
		}
		w.Shard, w.TotalShards = shard, total
		a.autoShard, a.autoTotal = shard, total
		failed := func(err error) {
			a.log.Error("following the StatefulSet's replicas; the shard count stays", "err", err)
		}
		if err := watch.WatchReplicas(ctx, a.clients.Kube, a.podNamespace, a.pod, a.tellReplicas, failed); err != nil {
			return err
		}
	}
	a.metrics.setSharding(w.Shard, w.TotalShards)
	owns := w.Owner()
	for _, g := range a.groups {
		g.key = groupKey(a.cfg, g.resource, w.Shard, w.TotalShards)
		for _, m := range g.maps {
			m.owns = owns
		}
	}
	if owns != nil {
		a.log.Info("sharding", "shard", w.Shard, "total_shards", w.TotalShards, "auto", w.AutoSharding)
	}
	return nil
}

// tellReplicas hands the StatefulSet's replica count to Run's loop. Only
// the latest count matters: one the loop has not taken yet is replaced.
func (a *Agent) tellReplicas(total int) {
	for {
		select {
		case a.replicas <- total:
			return
		default:
		}
		select {
		case <-a.replicas:
		default:
		}
	}
}

// reshard makes total the shard count: this replica stops sending the
// objects it no longer owns at once, and new groups list the objects it
// owns now. It runs on the snapshot goroutine, between snapshots.
func (a *Agent) reshard(total int) {
	if total == a.autoTotal {
		return
	}
	a.log.Info("resharding: the StatefulSet's replicas changed", "shard", a.autoShard, "total_shards", total, "was", a.autoTotal)
	a.autoTotal = total
	if owns := (&watch.Config{Shard: a.autoShard, TotalShards: total}).Owner(); owns != nil {
		for _, g := range a.groups {
			for _, m := range g.maps {
				m.handOff(owns)
			}
			// A group that handed objects off lacks them for good: should
			// the count go back before its replacement takes over, it
			// must still be replaced, not kept as unchanged.
			g.key += "\nhanded off"
		}
	}
	a.swapGroups(a.cfg)
	a.refresh()
	if !a.resharding {
		a.resharding = true
		a.reshardPoll = time.NewTicker(firstSnapshotPoll(a.cfg.SnapshotInterval))
	}
}

// reshardDue ticks while a new shard count waits for its initial lists;
// nil (never) otherwise.
func (a *Agent) reshardDue() <-chan time.Time {
	if !a.resharding {
		return nil
	}
	return a.reshardPoll.C
}

// reshardDone takes a snapshot at once when every new group holds its
// initial list: the objects this replica gained are sent now, not a whole
// snapshot_interval later, which keeps their series' gap at the receiver
// within one interval. The ticker restarts from here.
func (a *Agent) reshardDone() {
	for _, p := range a.pending {
		if !p.synced() {
			return
		}
	}
	a.resharding = false
	a.reshardPoll.Stop()
	n := a.snapshot(time.Now())
	a.restartTicker(a.cfg.SnapshotInterval)
	a.log.Info("resharded: took a snapshot at once", "shard", a.autoShard, "total_shards", a.autoTotal, "samples", n)
}
