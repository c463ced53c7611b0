package kubelet

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// Modes the kubelets are reached in.
const (
	// ModeDirect dials https://<node address>:<kubelet port> with the
	// service account token (RBAC: get on nodes/metrics, which reaches
	// the metrics paths only).
	ModeDirect = "direct"
	// ModeAPIServer goes through /api/v1/nodes/<name>/proxy/<path> (RBAC:
	// get on nodes/proxy), for agents that cannot reach the nodes. That
	// grant is not read-only: the kubelet serves exec and attach as
	// WebSocket over GET, so get on nodes/proxy runs commands in any
	// container of any node.
	ModeAPIServer = "apiserver"
)

// The kubelet paths that can be read.
const (
	PathCadvisor = "/metrics/cadvisor"
	PathResource = "/metrics/resource"
	PathKubelet  = "/metrics"
)

// Where a pod finds its service account credentials.
const (
	serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	serviceAccountCA    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Config is the kubelet section: which paths of every node's kubelet are
// read, how often and how.
type Config struct {
	// Mode is how the kubelets are reached: direct or apiserver.
	Mode string `yaml:"mode"`
	// Paths are the kubelet paths read from every node.
	Paths []PathConfig `yaml:"paths"`
	// Interval is the time between two reads of a node; 0 takes
	// snapshot_interval (set by the agent before Validate).
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one read of one path of one node.
	Timeout time.Duration `yaml:"timeout"`
	// Concurrency is how many reads run at once.
	Concurrency int `yaml:"concurrency"`
	// Scheme is the direct mode's scheme: https, or http for a kubelet's
	// plain port.
	Scheme string `yaml:"scheme"`
	// BearerTokenFile is the token the direct mode sends, read again on
	// every read (it rotates); empty sends none.
	BearerTokenFile string `yaml:"bearer_token_file"`
	// TLSConfig verifies the kubelets in direct mode (the pod's CA by
	// default; outside a pod, the kubeconfig's).
	TLSConfig config.TLSConfig `yaml:"tls_config"`
	// AllowTokenOverUnverifiedConnection lets the direct mode send the
	// token where the kubelet's certificate is not verified (scheme http,
	// or tls_config.insecure_skip_verify): whoever answers on a node's
	// address then gets the token.
	AllowTokenOverUnverifiedConnection bool `yaml:"allow_token_over_unverified_connection"`
	// AddressTypes are the node address types the direct mode tries, in
	// order, for a kubelet's address.
	AddressTypes []string `yaml:"address_types"`
	// BodySizeLimit is the largest body in bytes, after decompression; a
	// larger one fails the read.
	BodySizeLimit int64 `yaml:"body_size_limit"`
	// SampleLimit fails a read that keeps more samples; 0 is no limit.
	SampleLimit int `yaml:"sample_limit"`
	// LabelLimit fails a read with a series of more labels; 0 is no limit.
	LabelLimit int `yaml:"label_limit"`
	// LabelNameLengthLimit fails a read with a longer label name; 0 is no
	// limit.
	LabelNameLengthLimit int `yaml:"label_name_length_limit"`
	// LabelValueLengthLimit fails a read with a longer label value; 0 is
	// no limit.
	LabelValueLengthLimit int `yaml:"label_value_length_limit"`
	// FamilyPrefixes are the metric name prefixes a body may carry;
	// other series are dropped. kube_ series are always dropped: they are
	// the agent's own.
	FamilyPrefixes []string `yaml:"family_prefixes"`
	// MaxSampleAge drops a sample whose timestamp is older than this at
	// the read; 0 keeps any.
	MaxSampleAge time.Duration `yaml:"max_sample_age"`
	// MaxSampleFuture drops a sample whose timestamp is further ahead
	// than this at the read; 0 keeps any.
	MaxSampleFuture time.Duration `yaml:"max_sample_future"`
	// Job is the job label of every series.
	Job string `yaml:"job"`
	// TargetLabels are added to every series whose body has no label of
	// the name (an empty one counts), as the target labels of
	// kube-prometheus-stack's kubelet ServiceMonitor are (honorLabels:
	// true).
	TargetLabels map[string]string `yaml:"target_labels"`
}

// PathConfig is one kubelet path and what is kept of it.
type PathConfig struct {
	// Path is /metrics/cadvisor, /metrics/resource or /metrics.
	Path string `yaml:"path"`
	// MetricAllowlist keeps only metrics whose name matches one of these
	// regular expressions (the rules of metric_allowlist).
	MetricAllowlist []string `yaml:"metric_allowlist,omitempty"`
	// MetricDenylist drops metrics whose name matches one of these.
	// Mutually exclusive with MetricAllowlist.
	MetricDenylist []string `yaml:"metric_denylist,omitempty"`
	// KeepEmptyContainer keeps the cAdvisor series that Grafana's
	// k8s-monitoring drops (container_cpu|fs|memory_* without container,
	// and those and container_network_* without image: pod-level and
	// system-slice duplicates). The node totals (id="/") are always kept.
	KeepEmptyContainer bool `yaml:"keep_empty_container"`

	// allow and deny are the compiled lists, set by Validate.
	allow, deny []*regexp.Regexp
}

// DefaultConfig holds every default of the kubelet section.
var DefaultConfig = Config{
	Mode:            ModeDirect,
	Timeout:         10 * time.Second,
	Concurrency:     10,
	Scheme:          "https",
	BearerTokenFile: serviceAccountToken,
	TLSConfig:       config.TLSConfig{CAFile: serviceAccountCA},
	Job:             "kubelet",
	AddressTypes:    defaultAddressTypes,
	FamilyPrefixes:  DefaultFamilyPrefixes,
	BodySizeLimit:   16 << 20,
	SampleLimit:     100_000,
	MaxSampleAge:    10 * time.Minute,
	MaxSampleFuture: 10 * time.Minute,
}

// Node address types, as status.addresses names them.
const (
	AddressInternalIP  = "InternalIP"
	AddressExternalIP  = "ExternalIP"
	AddressInternalDNS = "InternalDNS"
	AddressExternalDNS = "ExternalDNS"
	AddressHostname    = "Hostname"
)

// defaultAddressTypes is the order of the prometheus-operator's kubelet
// endpoints, which kube-prometheus-stack scrapes.
var defaultAddressTypes = []string{AddressInternalIP, AddressExternalIP, AddressHostname}

// DefaultFamilyPrefixes are the families the kubelet serves on
// /metrics/cadvisor, /metrics/resource, /metrics/probes and /metrics:
// its own, cAdvisor's, and those of the Kubernetes libraries it links.
var DefaultFamilyPrefixes = []string{
	"aggregator_", "apiserver_", "authenticated_user_", "authentication_",
	"cadvisor_", "cardinality_enforcement_", "container_", "csi_",
	"disabled_metrics_", "force_cleaned_failed_volume_", "get_token_", "go_",
	"hidden_metrics_", "kubelet_", "kubernetes_", "machine_", "node_",
	"plugin_manager_", "pod_", "process_", "prober_", "reconstruct_volume_",
	"registered_metrics_", "resource_scrape_", "rest_client_", "scrape_error",
	"storage_operation_", "volume_", "workqueue_",
}

// defaultTargetLabels are the target labels of kube-prometheus-stack's
// kubelet endpoints besides job, node, instance and metrics_path.
var defaultTargetLabels = map[string]string{
	"endpoint":  "https-metrics",
	"namespace": "kube-system",
	"service":   "kube-prometheus-stack-kubelet",
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	if err := unmarshal((*plain)(c)); err != nil {
		return err
	}
	if c.Paths == nil {
		c.Paths = []PathConfig{{Path: PathCadvisor}}
	}
	if c.TargetLabels == nil {
		c.TargetLabels = maps.Clone(defaultTargetLabels)
	}
	// The defaults' slices are shared: a Config owns its own.
	c.AddressTypes = slices.Clone(c.AddressTypes)
	c.FamilyPrefixes = slices.Clone(c.FamilyPrefixes)
	return nil
}

// SetDirectory makes the section's file paths (bearer_token_file and
// tls_config's files) relative to dir, the configuration file's, as
// remote_write's are.
func (c *Config) SetDirectory(dir string) {
	c.BearerTokenFile = config.JoinDir(dir, c.BearerTokenFile)
	c.TLSConfig.SetDirectory(dir)
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate checks the section and compiles the metric lists. Keys in
// errors are relative to the section.
func (c *Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeDirect, ModeAPIServer:
	default:
		errs = append(errs, confkey.Errorf("mode", "must be %q or %q, not %q", ModeDirect, ModeAPIServer, c.Mode))
	}
	if c.Scheme != "https" && c.Scheme != "http" {
		errs = append(errs, confkey.Errorf("scheme", "must be https or http, not %q", c.Scheme))
	}
	if c.Interval < time.Second {
		errs = append(errs, confkey.Errorf("interval", "must be at least 1s, not %s", c.Interval))
	}
	if c.Timeout <= 0 {
		errs = append(errs, confkey.Errorf("timeout", "must be positive, not %s", c.Timeout))
	} else if c.Interval > 0 && c.Timeout > c.Interval {
		errs = append(errs, confkey.Errorf("timeout", "%s is longer than interval %s: reads would overlap", c.Timeout, c.Interval))
	}
	if c.Concurrency < 1 {
		errs = append(errs, confkey.Errorf("concurrency", "must be at least 1, not %d", c.Concurrency))
	}
	if c.Job == "" {
		errs = append(errs, confkey.Errorf("job", "is empty"))
	}
	if err := c.TLSConfig.Validate(); err != nil {
		errs = append(errs, confkey.Errorf("tls_config", "%v", err))
	}
	errs = append(errs, c.validateTrust()...)
	errs = append(errs, c.validateLimits()...)
	for _, name := range slices.Sorted(maps.Keys(c.TargetLabels)) {
		key := "target_labels." + name
		switch {
		case !labelNameRE.MatchString(name) || len(name) > 1 && name[:2] == "__":
			errs = append(errs, confkey.Errorf(key, "%q is not a valid label name", name))
		case reserved[name]:
			errs = append(errs, confkey.Errorf(key, "%q is set by the agent itself", name))
		}
	}
	if len(c.Paths) == 0 {
		errs = append(errs, confkey.Errorf("paths", "at least one path is required"))
	}
	seen := map[string]int{}
	for i := range c.Paths {
		key := confkey.Index("paths", i)
		if err := c.Paths[i].validate(); err != nil {
			errs = append(errs, confkey.Under(key, err))
		}
		if j, dup := seen[c.Paths[i].Path]; dup {
			errs = append(errs, confkey.Errorf(key+".path", "%q is also paths[%d]", c.Paths[i].Path, j))
		}
		seen[c.Paths[i].Path] = i
	}
	return errors.Join(errs...)
}

// UnverifiedToken reports whether the direct mode sends a token where the
// kubelet's certificate is not verified, which Validate refuses unless
// allow_token_over_unverified_connection accepts it.
func (c *Config) UnverifiedToken() bool {
	return c.Mode == ModeDirect && c.BearerTokenFile != "" && (c.Scheme == "http" || c.TLSConfig.InsecureSkipVerify)
}

// validateTrust refuses to send the token where whoever answers on a
// node's address would get it, unless the operator said so.
func (c *Config) validateTrust() []error {
	var errs []error
	if c.UnverifiedToken() && !c.AllowTokenOverUnverifiedConnection {
		key, why := "scheme", "http sends bearer_token_file's token in clear text"
		if c.Scheme != "http" {
			key, why = "tls_config.insecure_skip_verify", "true sends bearer_token_file's token to any server on a node's address"
		}
		errs = append(errs, confkey.Errorf(key, "%s: set allow_token_over_unverified_connection: true to accept that, or bearer_token_file: \"\" to send none", why))
	}
	if len(c.AddressTypes) == 0 {
		errs = append(errs, confkey.Errorf("address_types", "at least one address type is required"))
	}
	for i, t := range c.AddressTypes {
		switch t {
		case AddressInternalIP, AddressExternalIP, AddressInternalDNS, AddressExternalDNS, AddressHostname:
		default:
			errs = append(errs, confkey.Errorf(confkey.Index("address_types", i), "must be one of %s, %s, %s, %s, %s, not %q",
				AddressInternalIP, AddressExternalIP, AddressInternalDNS, AddressExternalDNS, AddressHostname, t))
		}
	}
	return errs
}

// validateLimits checks the limits a body is held to.
func (c *Config) validateLimits() []error {
	var errs []error
	if c.BodySizeLimit < 1<<10 {
		errs = append(errs, confkey.Errorf("body_size_limit", "must be at least 1024 bytes, not %d", c.BodySizeLimit))
	}
	for _, l := range []struct {
		key string
		v   int
	}{{"sample_limit", c.SampleLimit}, {"label_limit", c.LabelLimit}, {"label_name_length_limit", c.LabelNameLengthLimit}, {"label_value_length_limit", c.LabelValueLengthLimit}} {
		if l.v < 0 {
			errs = append(errs, confkey.Errorf(l.key, "must be 0 (no limit) or more, not %d", l.v))
		}
	}
	if c.MaxSampleAge < 0 {
		errs = append(errs, confkey.Errorf("max_sample_age", "must be 0 (no limit) or more, not %s", c.MaxSampleAge))
	}
	if c.MaxSampleFuture < 0 {
		errs = append(errs, confkey.Errorf("max_sample_future", "must be 0 (no limit) or more, not %s", c.MaxSampleFuture))
	}
	if len(c.FamilyPrefixes) == 0 {
		errs = append(errs, confkey.Errorf("family_prefixes", "at least one prefix is required: without, no series passes"))
	}
	for i, p := range c.FamilyPrefixes {
		if strings.HasPrefix(p, kubePrefix) {
			errs = append(errs, confkey.Errorf(confkey.Index("family_prefixes", i), "%q never passes: kube_ series are the agent's own", p))
		}
	}
	return errs
}

// kubePrefix starts the agent's own state series, which a kubelet body
// never carries.
const kubePrefix = "kube_"

// reserved are the labels every series gets from the agent.
var reserved = map[string]bool{"job": true, "node": true, "instance": true, "metrics_path": true}

func (p *PathConfig) validate() error {
	var errs []error
	switch p.Path {
	case PathCadvisor, PathResource, PathKubelet:
	default:
		errs = append(errs, confkey.Errorf("path", "must be one of %s, %s, %s, not %q", PathCadvisor, PathResource, PathKubelet, p.Path))
	}
	if p.KeepEmptyContainer && p.Path != PathCadvisor {
		errs = append(errs, confkey.Errorf("keep_empty_container", "applies only to %s", PathCadvisor))
	}
	if len(p.MetricAllowlist) > 0 && len(p.MetricDenylist) > 0 {
		errs = append(errs, confkey.Errorf("metric_denylist", "metric_allowlist and metric_denylist are mutually exclusive: set only one"))
	}
	var err error
	if p.allow, err = confkey.Regexps("metric_allowlist", p.MetricAllowlist); err != nil {
		errs = append(errs, err)
	}
	if p.deny, err = confkey.Regexps("metric_denylist", p.MetricDenylist); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// selected reports whether a metric of this path is kept by its lists.
func (p *PathConfig) selected(name string) bool {
	if len(p.allow) > 0 {
		return matchAny(p.allow, name)
	}
	return !matchAny(p.deny, name)
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
