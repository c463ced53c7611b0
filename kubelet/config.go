package kubelet

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/common/config"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// Modes the kubelets are reached in.
const (
	// ModeDirect dials https://<node InternalIP>:<kubelet port> with the
	// service account token (RBAC: nodes/metrics).
	ModeDirect = "direct"
	// ModeAPIServer goes through /api/v1/nodes/<name>/proxy/<path> (RBAC:
	// nodes/proxy), for agents that cannot reach the node IPs.
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
	// default).
	TLSConfig config.TLSConfig `yaml:"tls_config"`
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
