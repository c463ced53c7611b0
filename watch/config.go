package watch

import (
	"errors"
	"slices"
	"strings"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// Config chooses the cluster and what of it is watched.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file. Empty: the in-cluster
	// service account, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	// Resources lists the resources to watch, by kube-state-metrics'
	// names ("pods", "nodes", ...). Empty: DefaultResources.
	Resources []string `yaml:"resources,omitempty"`
}

// Validate checks the resource names and fills in the defaults. Keys in
// errors are relative to where Config is inlined.
func (c *Config) Validate() error {
	if len(c.Resources) == 0 {
		c.Resources = slices.Clone(DefaultResources)
	}
	var errs []error
	seen := map[string]bool{}
	for i, r := range c.Resources {
		key := confkey.Index("resources", i)
		if _, ok := Lookup(r); !ok {
			errs = append(errs, confkey.Errorf(key, "unknown resource %q (known: %s)", r, strings.Join(Names(), ", ")))
			continue
		}
		if seen[r] {
			errs = append(errs, confkey.Errorf(key, "resource %q is listed twice", r))
		}
		seen[r] = true
	}
	return errors.Join(errs...)
}
