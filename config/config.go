package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kube-state-push/kube-state-push/customresource"
	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/internal/redact"
	"github.com/kube-state-push/kube-state-push/kubelet"
	"github.com/kube-state-push/kube-state-push/leader"
	"github.com/kube-state-push/kube-state-push/pull"
	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// Config is the whole configuration file. Each stage's settings live beside
// the stage (watch.Config, queue.Config, pull.Config, ...); this type only
// composes them, with the few keys of the agent itself (the snapshot
// ticker, external labels, its own listener, shutdown).
type Config struct {
	// Watch chooses the cluster and the resources (kubeconfig, resources).
	Watch watch.Config `yaml:",inline"`
	// SnapshotInterval is how often the series are sent.
	SnapshotInterval time.Duration `yaml:"snapshot_interval,omitempty"`
	// ExternalLabels are added to every series that lacks them.
	ExternalLabels map[string]string `yaml:"external_labels,omitempty"`
	// ListenAddress serves /metrics, /healthz and /readyz; empty disables.
	ListenAddress string `yaml:"listen_address,omitempty"`
	// ShutdownTimeout bounds the final flush at stop.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout,omitempty"`
	// PushSelfMetrics also pushes the agent's own metrics (those of /metrics)
	// with every snapshot, labelled job="kube-state-push". No omitempty:
	// false must print, or the effective config would load back as true.
	PushSelfMetrics bool `yaml:"push_self_metrics"`
	// RemoteWrite lists the endpoints every sample is sent to.
	RemoteWrite []queue.Config `yaml:"remote_write"`
	// LeaderElection lets replicas elect one that pushes (package leader).
	LeaderElection leader.Config `yaml:"leader_election,omitempty"`
	// CustomResourceState renders custom resources from kube-state-metrics'
	// CustomResourceStateMetrics document, inline or the path of a file.
	CustomResourceState *customresource.Config `yaml:"custom_resource_state,omitempty"`
	// Pull also serves the state series for scraping (package pull).
	Pull pull.Config `yaml:"pull,omitempty"`
	// Kubelet also reads every owned node's kubelet (/metrics/cadvisor by
	// default) and pushes its series with the state series; nil: off.
	Kubelet *kubelet.Config `yaml:"kubelet,omitempty"`
}

// DefaultConfig holds every default of the top level.
var DefaultConfig = Config{
	Watch:            watch.Config{KubeAPIReadBatching: time.Second},
	SnapshotInterval: 30 * time.Second,
	ListenAddress:    ":8080",
	ShutdownTimeout:  30 * time.Second,
	PushSelfMetrics:  true,
	LeaderElection:   leader.DefaultConfig,
	Pull:             pull.DefaultConfig,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	return unmarshal((*plain)(c))
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// haReplicaLabel is the replica label of Mimir's and Cortex's HA tracker, the
// one reserved name external_labels accept.
const haReplicaLabel = "__replica__"

// expandExternalLabels replaces ${VAR} and $VAR in external label values by
// the environment variable's value, as Prometheus does with
// --enable-feature=expand-external-labels: "$$" stands for "$", and an
// undefined or empty variable expands to nothing; a value left empty is
// an error naming the key and the variables. A deployment can so set
// __replica__: ${POD_NAME} from the downward API.
func expandExternalLabels(labels map[string]string) []error {
	var errs []error
	for _, name := range sortedKeys(labels) {
		var unset []string
		v := os.Expand(labels[name], func(s string) string {
			if s == "$" {
				return "$"
			}
			v := os.Getenv(s)
			if v == "" {
				unset = append(unset, s)
			}
			return v
		})
		labels[name] = v
		if v == "" && len(unset) > 0 {
			errs = append(errs, confkey.Errorf("external_labels."+name,
				"value is empty once environment variables are expanded (not set or empty: %s)", strings.Join(unset, ", ")))
		}
	}
	return errs
}

// ReadBatching is the API server connections' read batching: at most a
// tenth of snapshot_interval, so that an interval always holds many
// windows.
func (c *Config) ReadBatching() time.Duration {
	return min(c.Watch.KubeAPIReadBatching, c.SnapshotInterval/10)
}

// Validate checks the configuration and fills in derived defaults. Errors
// name the key they are about (*confkey.Error).
func (c *Config) Validate() error {
	var errs []error
	if err := c.Watch.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.SnapshotInterval < time.Second {
		errs = append(errs, confkey.Errorf("snapshot_interval", "must be at least 1s, not %s", c.SnapshotInterval))
	}
	if b := c.Watch.KubeAPIReadBatching; b < 0 {
		errs = append(errs, confkey.Errorf("kube_api_read_batching", "must be at least 0, not %s", b))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, confkey.Errorf("shutdown_timeout", "must be positive, not %s", c.ShutdownTimeout))
	}
	for _, name := range sortedKeys(c.ExternalLabels) {
		key := "external_labels." + name
		switch {
		// Names starting with "__" are reserved, but Mimir's and Cortex's HA
		// deduplication needs __replica__ on every series (it drops the
		// label before storing), as Prometheus' external_labels allow.
		case !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") && name != haReplicaLabel:
			errs = append(errs, confkey.Errorf(key, "%q is not a valid label name", name))
		case c.ExternalLabels[name] == "":
			errs = append(errs, confkey.Errorf(key, "value is empty"))
		}
	}
	if len(c.Watch.Resources) == 0 && c.CustomResourceState == nil {
		errs = append(errs, confkey.Errorf("resources", "is empty and there is no custom_resource_state: nothing to watch (leave resources out for the defaults)"))
	}
	if c.CustomResourceState != nil {
		if err := c.CustomResourceState.Validate(); err != nil {
			errs = append(errs, confkey.Under("custom_resource_state", err))
		}
	}
	if c.Kubelet != nil {
		errs = append(errs, c.validateKubelet())
	}
	if err := c.Pull.Validate(); err != nil {
		errs = append(errs, confkey.Under("pull", err))
	}
	if err := c.LeaderElection.Validate(); err != nil {
		errs = append(errs, confkey.Under("leader_election", err))
	}
	if len(c.RemoteWrite) == 0 {
		errs = append(errs, confkey.Errorf("remote_write", "at least one endpoint is required"))
	}
	names := map[string]int{}
	for i := range c.RemoteWrite {
		key := confkey.Index("remote_write", i)
		if err := c.RemoteWrite[i].Validate(); err != nil {
			errs = append(errs, confkey.Under(key, err))
			continue
		}
		n := c.RemoteWrite[i].Name
		if j, dup := names[n]; dup {
			errs = append(errs, confkey.Errorf(key+".name", "%q is also the name of remote_write[%d]; give each endpoint its own name", n, j))
		}
		names[n] = i
	}
	errs = append(errs, c.validateDiskBufferDirs()...)
	return errors.Join(errs...)
}

// validateDiskBufferDirs checks that no two endpoints share a disk buffer
// directory, nor one lies inside another's: each endpoint locks its own
// and takes every segment file in it for its own, so that a shared one
// would fail only at start (or, nested, mix two endpoints' files). Paths
// are compared absolute and cleaned, through symbolic links where they
// exist already.
func (c *Config) validateDiskBufferDirs() []error {
	var errs []error
	type dir struct {
		path string
		i    int
	}
	var seen []dir
	for i, rw := range c.RemoteWrite {
		if rw.DiskBuffer.Directory == "" {
			continue
		}
		p := canonicalDir(rw.DiskBuffer.Directory)
		key := confkey.Index("remote_write", i) + ".disk_buffer.directory"
		for _, d := range seen {
			other := fmt.Sprintf("remote_write[%d] (%s)", d.i, c.RemoteWrite[d.i].Name)
			var msg string
			switch {
			case p == d.path:
				msg = "is also the disk buffer directory of " + other
			case within(p, d.path):
				msg = "lies inside the disk buffer directory of " + other
			case within(d.path, p):
				msg = "holds the disk buffer directory of " + other
			default:
				continue
			}
			errs = append(errs, confkey.Errorf(key, "%q of endpoint %s %s; give each endpoint a directory of its own",
				rw.DiskBuffer.Directory, rw.Name, msg))
			break
		}
		seen = append(seen, dir{p, i})
	}
	return errs
}

// canonicalDir returns dir absolute and cleaned, with the symbolic links of
// its longest existing prefix resolved.
func canonicalDir(dir string) string {
	p, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	var rest []string
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(cur) == cur {
			return p
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
	}
}

// within reports whether path lies strictly inside dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

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

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// LoadFile reads, parses and validates a configuration file. Every error
// says the file, the line and the key.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := Load(data, path)
	if err != nil {
		return nil, err
	}
	dir, _ := filepath.Abs(filepath.Dir(path))
	for i := range cfg.RemoteWrite {
		// Credential and certificate files are relative to the config file.
		cfg.RemoteWrite[i].HTTPClientConfig.SetDirectory(dir)
	}
	if cfg.Kubelet != nil {
		cfg.Kubelet.SetDirectory(dir)
	}
	return cfg, nil
}

// Effective returns the configuration as YAML, defaults included, for
// `kube-state-push check-config`. Secrets (passwords, credentials, client
// secrets, TLS keys, proxy headers) are prometheus/common config.Secret
// values, whose MarshalYAML, which yaml.v3 honours like yaml.v2, writes
// "<secret>" (config.MarshalSecretValue is never set here). Each endpoint
// masks its URLs, header values and OAuth 2.0 parameters itself
// (queue.Config.MarshalYAML). Credential files print as paths. A comment
// on resources says which are on: the defaults, a list, or none.
func (c *Config) Effective() ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	if key := mappingKey(&doc, "resources"); key != nil {
		key.HeadComment = "resources: " + c.resourcesComment()
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return buf.Bytes(), nil
}

// Load parses and validates a configuration; name is used in errors.
func Load(data []byte, name string) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(name, err)
	}
	cfg := DefaultConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, redact.Error(decodeError(name, &root, err))
	}
	// The map is the decoder's own (DefaultConfig has none), so expanding
	// it in place changes no shared state.
	expandErrs := expandExternalLabels(cfg.ExternalLabels)
	if cfg.CustomResourceState != nil {
		// A document's file is relative to the configuration file.
		cfg.CustomResourceState.SetDirectory(filepath.Dir(name))
	}
	err := cfg.Validate()
	if len(expandErrs) > 0 {
		err = errors.Join(append(expandErrs, withoutKeys(err, expandErrs))...)
	}
	if err != nil {
		// No validation message should quote a URL; should one do, its
		// credentials are masked here.
		return nil, redact.Error(keyErrors(name, &root, err))
	}
	return &cfg, nil
}

// withoutKeys leaves out of err the key errors about a key one of the
// errors in named names: a label whose variables expand to nothing is
// reported once, not again as an empty value.
func withoutKeys(err error, named []error) error {
	if err == nil {
		return nil
	}
	skip := map[string]bool{}
	for _, e := range named {
		var ke *confkey.Error
		if errors.As(e, &ke) {
			skip[ke.Key] = true
		}
	}
	var out []error
	for _, e := range flatten([]error{err}) {
		var ke *confkey.Error
		if errors.As(e, &ke) && skip[ke.Key] {
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// resourcesComment says which built-in resources the agent watches.
func (c *Config) resourcesComment() string {
	switch {
	case len(c.Watch.Resources) == 0:
		return "none (custom resources only)"
	case slices.Equal(c.Watch.Resources, watch.DefaultResources):
		return fmt.Sprintf("the %d defaults", len(c.Watch.Resources))
	}
	return fmt.Sprintf("%d of %d", len(c.Watch.Resources), len(watch.Names()))
}

// mappingKey returns the node of key in a mapping node, or nil.
func mappingKey(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}
