package agent

import (
	"slices"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// validateKubelet fills in the kubelet section's interval
// (snapshot_interval by default) and checks it: the node list comes from
// the nodes resource's watch, which must therefore run.
func (c *Config) validateKubelet() error {
	if c.Kubelet.Interval == 0 {
		c.Kubelet.Interval = c.SnapshotInterval
	}
	if !slices.Contains(c.Watch.Resources, "nodes") {
		return confkey.Errorf("kubelet", "needs the nodes resource in resources: the nodes to read come from its watch")
	}
	return confkey.Under("kubelet", c.Kubelet.Validate())
}
