package watch

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// Config chooses the cluster, what of it is watched, and which families are
// rendered. The keys are kube-state-metrics' flags in snake_case.
type Config struct {
	// Kubeconfig is the path of a kubeconfig file. Empty: the in-cluster
	// service account, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	// KubeAPICompression asks the API server to gzip lists and watches.
	// Off (the default): the agent asks for them uncompressed, which
	// spares the API server the gzip and the agent the inflating, which
	// shows in its CPU profile, for bytes that stay inside the cluster.
	KubeAPICompression bool `yaml:"kube_api_compression"`
	// KubeAPIReadBatching is how long the API server connections wait,
	// after a read that waited for its data, before they read again, so
	// that a trickle of watch events is read and handled in batches
	// (ReadBatching); 0 reads each event as it arrives. No omitempty: 0
	// must print, or the effective config would load back the default.
	KubeAPIReadBatching time.Duration `yaml:"kube_api_read_batching"`
	// Resources lists the resources to watch, by kube-state-metrics'
	// names ("pods", "nodes", ...). Absent (nil): DefaultResources. An
	// explicit empty list (resources: []): none, for an agent that
	// renders custom resources only. No omitempty: an empty list must
	// print, or the effective config would load back the defaults.
	Resources []string `yaml:"resources"`
	// Namespaces limits namespaced resources to these namespaces (one
	// watch each). Empty: all namespaces.
	Namespaces []string `yaml:"namespaces,omitempty"`
	// NamespacesDenylist leaves these namespaces out.
	NamespacesDenylist []string `yaml:"namespaces_denylist,omitempty"`
	// MetricAllowlist renders only families whose name matches one of these
	// regular expressions (unanchored, as in kube-state-metrics).
	MetricAllowlist []string `yaml:"metric_allowlist,omitempty"`
	// MetricDenylist renders every family except those matching one of
	// these. Mutually exclusive with MetricAllowlist.
	MetricDenylist []string `yaml:"metric_denylist,omitempty"`
	// MetricOptInList turns on opt-in families whose name matches one of
	// these (kube_pod_nodeselectors, kube_persistentvolume_csi_attributes).
	MetricOptInList []string `yaml:"metric_opt_in_list,omitempty"`
	// MetricLabelsAllowlist maps a resource ("*" for all) to the Kubernetes
	// label keys its kube_<resource>_labels family exports ("*" for all).
	MetricLabelsAllowlist map[string][]string `yaml:"metric_labels_allowlist,omitempty"`
	// MetricAnnotationsAllowlist is the same for annotations.
	MetricAnnotationsAllowlist map[string][]string `yaml:"metric_annotations_allowlist,omitempty"`
	// SeriesLabelsFromObject maps a resource to Kubernetes label keys of
	// its objects that every series of the object carries, as
	// label_<name> (the names kube_<resource>_labels gives them).
	SeriesLabelsFromObject map[string][]string `yaml:"series_labels_from_object,omitempty"`
	// Shard is this instance's shard, in [0, total_shards): it renders only
	// the objects whose UID hashes onto it (kube-state-metrics' --shard).
	Shard int `yaml:"shard"`
	// TotalShards is the number of instances the objects are split among;
	// 0 (unset) means 1, no sharding (--total-shards).
	TotalShards int `yaml:"total_shards"`
	// AutoSharding takes shard and total_shards from the StatefulSet this
	// pod belongs to (the env POD_NAME and POD_NAMESPACE), and follows
	// its replicas (WatchReplicas).
	AutoSharding bool `yaml:"auto_sharding"`

	// LegacyV1Families also renders these kube-state-metrics v1.9.8
	// families that v2 renamed or dropped ("*" for all of
	// LegacyV1Families()), with v1's labels and values. Empty: none.
	LegacyV1Families []string `yaml:"legacy_v1_families,omitempty"`

	// allow, deny and optIn are the compiled lists, set by Validate.
	allow, deny, optIn []*regexp.Regexp
}

// Validate checks the settings, compiles the metric lists and fills in the
// defaults. Keys in errors are relative to where Config is inlined.
func (c *Config) Validate() error {
	// yaml.v3 leaves an absent key nil and decodes "[]" to an empty
	// slice; that difference is the user's choice of none.
	if c.Resources == nil {
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
	for i, ns := range c.Namespaces {
		if ns == "" {
			errs = append(errs, confkey.Errorf(confkey.Index("namespaces", i), "is empty"))
		}
	}
	for i, ns := range c.NamespacesDenylist {
		if ns == "" {
			errs = append(errs, confkey.Errorf(confkey.Index("namespaces_denylist", i), "is empty"))
		}
	}
	if len(c.MetricAllowlist) > 0 && len(c.MetricDenylist) > 0 {
		errs = append(errs, confkey.Errorf("metric_denylist", "metric_allowlist and metric_denylist are mutually exclusive: set only one"))
	}
	var err error
	if c.allow, err = confkey.Regexps("metric_allowlist", c.MetricAllowlist); err != nil {
		errs = append(errs, err)
	}
	if c.deny, err = confkey.Regexps("metric_denylist", c.MetricDenylist); err != nil {
		errs = append(errs, err)
	}
	if c.optIn, err = confkey.Regexps("metric_opt_in_list", c.MetricOptInList); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, validateLegacyV1(c.LegacyV1Families))
	errs = append(errs, c.validateSharding())
	errs = append(errs, validateAllowlist("metric_labels_allowlist", c.MetricLabelsAllowlist))
	errs = append(errs, validateAllowlist("metric_annotations_allowlist", c.MetricAnnotationsAllowlist))
	errs = append(errs, validateSeriesLabels(c.SeriesLabelsFromObject))
	return errors.Join(errs...)
}

// validateSharding checks shard and total_shards, filling in the default
// of total_shards.
func (c *Config) validateSharding() error {
	if c.TotalShards == 0 {
		c.TotalShards = 1
	}
	switch {
	case c.TotalShards < 0:
		return confkey.Errorf("total_shards", "must be at least 1, not %d", c.TotalShards)
	case c.AutoSharding && (c.Shard != 0 || c.TotalShards != 1):
		return confkey.Errorf("auto_sharding", "takes shard and total_shards from the StatefulSet: leave them unset")
	case c.Shard < 0 || c.Shard >= c.TotalShards:
		return confkey.Errorf("shard", "must be in [0, total_shards) = [0, %d), not %d", c.TotalShards, c.Shard)
	}
	return nil
}

// validateLegacyV1 checks that legacy_v1_families names only v1 families
// the agent renders, or "*".
func validateLegacyV1(names []string) error {
	known := LegacyV1Families()
	var errs []error
	for i, n := range names {
		key := confkey.Index("legacy_v1_families", i)
		switch {
		case n != legacyAll && !slices.Contains(known, n):
			errs = append(errs, confkey.Errorf(key, "unknown v1 family %q (known: %s, or \"*\" for all)", n, strings.Join(known, ", ")))
		case slices.Contains(names[:i], n):
			errs = append(errs, confkey.Errorf(key, "family %q is listed twice", n))
		}
	}
	return errors.Join(errs...)
}

func validateAllowlist(key string, m map[string][]string) error {
	var errs []error
	names := make([]string, 0, len(m))
	for r := range m {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		k := key + "." + r
		if _, ok := Lookup(r); !ok && r != wildcard {
			errs = append(errs, confkey.Errorf(k, "unknown resource %q", r))
			continue
		}
		for i, l := range m[r] {
			if strings.Count(l, wildcard) > maxPartialWildcards && l != wildcard {
				errs = append(errs, confkey.Errorf(confkey.Index(k, i), "%q has more than one wildcard", l))
			}
		}
	}
	return errors.Join(errs...)
}

// validateSeriesLabels checks series_labels_from_object: known resources,
// and label keys without wildcards (every series of an object would carry
// every label a wildcard matched).
func validateSeriesLabels(m map[string][]string) error {
	var errs []error
	for _, r := range slices.Sorted(maps.Keys(m)) {
		k := "series_labels_from_object." + r
		if _, ok := Lookup(r); !ok {
			errs = append(errs, confkey.Errorf(k, "unknown resource %q", r))
			continue
		}
		for i, l := range m[r] {
			switch {
			case l == "":
				errs = append(errs, confkey.Errorf(confkey.Index(k, i), "is empty"))
			case strings.Contains(l, wildcard):
				errs = append(errs, confkey.Errorf(confkey.Index(k, i), "%q: name each label key, without wildcards", l))
			case slices.Contains(m[r][:i], l):
				errs = append(errs, confkey.Errorf(confkey.Index(k, i), "label key %q is listed twice", l))
			}
		}
	}
	return errors.Join(errs...)
}

// Selected reports whether a family is rendered: opt-in families only when
// the opt-in list names them, then the allowlist or denylist.
func (c *Config) Selected(f FamilyInfo) bool {
	if f.OptIn && !matchAny(c.optIn, f.Name) {
		return false
	}
	if len(c.allow) > 0 {
		return matchAny(c.allow, f.Name)
	}
	return !matchAny(c.deny, f.Name)
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// FamilyOptions returns the options of one resource's families: its label
// and annotation allowlists ("*" as a resource applies to every resource
// and takes precedence, as in kube-state-metrics).
func (c *Config) FamilyOptions(resource string) FamilyOptions {
	pick := func(m map[string][]string) []string {
		if l, ok := m[wildcard]; ok {
			return l
		}
		return m[resource]
	}
	return FamilyOptions{
		LabelsAllowlist:      pick(c.MetricLabelsAllowlist),
		AnnotationsAllowlist: pick(c.MetricAnnotationsAllowlist),
		LegacyV1:             c.LegacyV1Families,
		SeriesLabels:         c.SeriesLabelsFromObject[resource],
	}
}

// Scope is one watch of a resource: a namespace ("" for all) and a field
// selector.
type Scope struct {
	// Namespace is watched alone, or all namespaces when empty.
	Namespace string
	// FieldSelector restricts the watch, e.g. to leave namespaces out.
	FieldSelector string
}

// String names the scope for logs and metrics.
func (s Scope) String() string {
	if s.Namespace == "" {
		return "all"
	}
	return s.Namespace
}

// Scopes returns the watches a resource needs: one for a cluster-scoped
// resource; for a namespaced one, one per allowed namespace, or one over all
// namespaces with the denylist as a field selector.
func (c *Config) Scopes(r *Resource) []Scope {
	if !r.Namespaced {
		return []Scope{{}}
	}
	if len(c.Namespaces) == 0 {
		var sel []string
		for _, ns := range c.NamespacesDenylist {
			sel = append(sel, fmt.Sprintf("metadata.namespace!=%s", ns))
		}
		return []Scope{{FieldSelector: strings.Join(sel, ",")}}
	}
	var out []Scope
	for _, ns := range c.Namespaces {
		if !slices.Contains(c.NamespacesDenylist, ns) {
			out = append(out, Scope{Namespace: ns})
		}
	}
	return out
}
