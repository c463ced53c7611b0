package agent

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// What a reload changes: the running configuration compared with the new
// one (reload.go applies it).

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
func diffConfigs(old, cur *config.Config, sharding func(*config.Config) (int, int)) configDiff {
	var d configDiff
	if old.Watch.Kubeconfig != cur.Watch.Kubeconfig {
		d.restartOnly = append(d.restartOnly, "kubeconfig")
	}
	if old.Watch.KubeAPICompression != cur.Watch.KubeAPICompression {
		d.restartOnly = append(d.restartOnly, "kube_api_compression")
	}
	if old.Watch.KubeAPIReadBatching != cur.Watch.KubeAPIReadBatching {
		d.restartOnly = append(d.restartOnly, "kube_api_read_batching")
	}
	if old.ListenAddress != cur.ListenAddress {
		d.restartOnly = append(d.restartOnly, "listen_address")
	}
	if old.Pull.ListenAddress != cur.Pull.ListenAddress {
		d.restartOnly = append(d.restartOnly, "pull.listen_address")
	}
	if old.Pull.MaxConcurrentScrapes != cur.Pull.MaxConcurrentScrapes {
		d.restartOnly = append(d.restartOnly, "pull.max_concurrent_scrapes")
	}
	if old.LeaderElection != cur.LeaderElection {
		d.restartOnly = append(d.restartOnly, "leader_election")
	}
	if old.Watch.AutoSharding != cur.Watch.AutoSharding {
		d.restartOnly = append(d.restartOnly, "auto_sharding")
	}
	if kubeletChanged(old, cur) {
		d.restartOnly = append(d.restartOnly, "kubelet")
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
