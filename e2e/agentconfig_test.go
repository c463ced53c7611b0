package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"k8s.io/utils/ptr"
)

// agentConfig is the agent's configuration file as a test writes it: the
// keys the e2e tests set, marshalled to YAML. It does not use the agent's
// own config types, so that a test states the YAML a user would write.
// Keys no test sets often go in Extra.
type agentConfig struct {
	Kubeconfig string   `yaml:"kubeconfig,omitempty"`
	Resources  []string `yaml:"resources,omitempty,flow"`
	// NoResources writes "resources: []", which an empty Resources
	// leaves out: no built-in resource, custom resources only.
	NoResources      bool              `yaml:"-"`
	Namespaces       []string          `yaml:"namespaces,omitempty,flow"`
	SnapshotInterval time.Duration     `yaml:"snapshot_interval,omitempty"`
	ListenAddress    *string           `yaml:"listen_address,omitempty"`
	ShutdownTimeout  time.Duration     `yaml:"shutdown_timeout,omitempty"`
	PushSelfMetrics  *bool             `yaml:"push_self_metrics,omitempty"`
	ExternalLabels   map[string]string `yaml:"external_labels,omitempty"`
	LeaderElection   *leaderElection   `yaml:"leader_election,omitempty"`
	Kubelet          *kubeletConfig    `yaml:"kubelet,omitempty"`
	RemoteWrite      []*remoteWrite    `yaml:"remote_write"`
	// Extra holds more top-level keys (kubelet, pull, custom resources,
	// allow lists...), as YAML values.
	Extra map[string]any `yaml:",inline"`
}

// remoteWrite is one remote_write entry.
type remoteWrite struct {
	URL             string            `yaml:"url"`
	Name            string            `yaml:"name,omitempty"`
	RemoteTimeout   time.Duration     `yaml:"remote_timeout,omitempty"`
	ProtobufMessage string            `yaml:"protobuf_message,omitempty"`
	Protocol        string            `yaml:"protocol,omitempty"`
	Backfill        string            `yaml:"backfill,omitempty"`
	Headers         map[string]string `yaml:"headers,omitempty"`
	MetadataConfig  *metadataConfig   `yaml:"metadata_config,omitempty,flow"`
	DiskBuffer      *diskBuffer       `yaml:"disk_buffer,omitempty"`
	QueueConfig     queueConfig       `yaml:"queue_config,omitempty"`
	// Extra holds more keys of the entry (write_relabel_configs, auth...).
	Extra map[string]any `yaml:",inline"`
}

type metadataConfig struct {
	Send         bool          `yaml:"send"`
	SendInterval time.Duration `yaml:"send_interval,omitempty"`
}

type diskBuffer struct {
	Directory string `yaml:"directory"`
	// Extra holds more keys (max_bytes...).
	Extra map[string]any `yaml:",inline"`
}

type queueConfig struct {
	Capacity          int           `yaml:"capacity,omitempty"`
	MinShards         int           `yaml:"min_shards,omitempty"`
	MaxShards         int           `yaml:"max_shards,omitempty"`
	MaxSamplesPerSend int           `yaml:"max_samples_per_send,omitempty"`
	MaxBytesPerSend   int           `yaml:"max_bytes_per_send,omitempty"`
	BatchSendDeadline time.Duration `yaml:"batch_send_deadline,omitempty"`
	MinBackoff        time.Duration `yaml:"min_backoff,omitempty"`
	MaxBackoff        time.Duration `yaml:"max_backoff,omitempty"`
	MaxRetryDuration  time.Duration `yaml:"max_retry_duration,omitempty"`
	SampleAgeLimit    time.Duration `yaml:"sample_age_limit,omitempty"`
}

type kubeletConfig struct {
	Mode            string            `yaml:"mode,omitempty"`
	Interval        time.Duration     `yaml:"interval,omitempty"`
	Timeout         time.Duration     `yaml:"timeout,omitempty"`
	BearerTokenFile *string           `yaml:"bearer_token_file,omitempty"`
	TLSConfig       map[string]string `yaml:"tls_config,omitempty,flow"`
	TargetLabels    map[string]string `yaml:"target_labels,omitempty,flow"`
	// Extra holds more keys (paths...).
	Extra map[string]any `yaml:",inline"`
}

// newKubelet scrapes the kubelets every second (timeout 900ms) with the
// CA caFile, by mode (direct or apiserver; "" for the default).
func newKubelet(mode, caFile string) *kubeletConfig {
	k := &kubeletConfig{Mode: mode, Interval: time.Second, Timeout: 900 * time.Millisecond}
	if caFile != "" {
		k.TLSConfig = map[string]string{"ca_file": caFile}
	}
	return k
}

type leaderElection struct {
	Enabled        bool          `yaml:"enabled"`
	LeaseName      string        `yaml:"lease_name,omitempty"`
	LeaseNamespace string        `yaml:"lease_namespace,omitempty"`
	Identity       string        `yaml:"identity,omitempty"`
	LeaseDuration  time.Duration `yaml:"lease_duration,omitempty"`
	RenewDeadline  time.Duration `yaml:"renew_deadline,omitempty"`
	RetryPeriod    time.Duration `yaml:"retry_period,omitempty"`
}

// newConfig is the configuration most tests start from: the shared
// control plane, a snapshot every second, no listener, and one endpoint at
// url (newEndpoint). A test changes what its scenario needs.
func newConfig(url string) *agentConfig {
	return &agentConfig{
		Kubeconfig:       env.cp.Kubeconfig,
		SnapshotInterval: time.Second,
		ListenAddress:    ptr.To(""),
		RemoteWrite:      []*remoteWrite{newEndpoint("", url)},
	}
}

// newEndpoint is a remote_write entry with a short batch deadline, so that
// tests see samples within a tick.
func newEndpoint(name, url string) *remoteWrite {
	return &remoteWrite{URL: url, Name: name, QueueConfig: queueConfig{BatchSendDeadline: 100 * time.Millisecond}}
}

// captureConfig is newConfig without the agent's own series, for tests that
// compare every series a receiver got.
func captureConfig(url string) *agentConfig {
	return newConfig(url).noSelfMetrics()
}

// endpoint returns the first remote_write entry.
func (c *agentConfig) endpoint() *remoteWrite { return c.RemoteWrite[0] }

// set sets a top-level key not among the fields.
func (c *agentConfig) set(key string, value any) *agentConfig {
	if c.Extra == nil {
		c.Extra = map[string]any{}
	}
	c.Extra[key] = value
	return c
}

// noSelfMetrics leaves the agent's own series out of what it pushes.
func (c *agentConfig) noSelfMetrics() *agentConfig {
	c.PushSelfMetrics = ptr.To(false)
	return c
}

// yamlText marshals the configuration.
func (c *agentConfig) yamlText(t testing.TB) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	require.NoError(t, err)
	if c.NoResources {
		require.Empty(t, c.Resources, "NoResources with resources listed")
		b = append(b, "resources: []\n"...)
	}
	return string(b)
}

// yamlValue parses a YAML fragment into a value for agentConfig.Extra or
// remoteWrite.Extra, for nested settings a test states as text.
func yamlValue(t testing.TB, text string) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(text), &v), "%s", text)
	return v
}
