package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/queue"
	"github.com/kube-state-push/kube-state-push/watch"
)

// TestExampleConfig loads the documented example, so it can never rot. The
// example claims to show every default, so its values are checked against
// the defaults in the code.
func TestExampleConfig(t *testing.T) {
	cfg, err := LoadFile("../config.yaml")
	require.NoError(t, err)

	require.Empty(t, cfg.Watch.Kubeconfig)
	require.Equal(t, []string{"nodes", "pods"}, cfg.Watch.Resources)
	require.Equal(t, 0, cfg.Watch.Shard)
	require.Equal(t, 1, cfg.Watch.TotalShards)
	require.False(t, cfg.Watch.AutoSharding)
	require.Equal(t, 30*time.Second, cfg.SnapshotInterval)
	require.Equal(t, DefaultConfig.SnapshotInterval, cfg.SnapshotInterval)
	require.Equal(t, map[string]string{"cluster": "edge-1"}, cfg.ExternalLabels)
	require.Equal(t, DefaultConfig.ListenAddress, cfg.ListenAddress)
	require.Equal(t, DefaultConfig.ShutdownTimeout, cfg.ShutdownTimeout)
	require.True(t, cfg.PushSelfMetrics)
	require.Equal(t, DefaultConfig.PushSelfMetrics, cfg.PushSelfMetrics)

	require.Len(t, cfg.RemoteWrite, 1)
	rw := cfg.RemoteWrite[0]
	require.Equal(t, "central", rw.Name)
	require.Equal(t, "http://prometheus.monitoring.svc:9090/api/v1/write", rw.URL)
	require.Equal(t, map[string]string{"X-Scope-OrgID": "edge-1"}, rw.Headers)
	require.Equal(t, queue.DefaultConfig.RemoteTimeout, rw.RemoteTimeout)
	require.Equal(t, queue.QueueConfig{
		Capacity:          10000,
		MinShards:         1,
		MaxShards:         50,
		MaxSamplesPerSend: 10000,
		MaxBytesPerSend:   8 << 20,
		BatchSendDeadline: 5 * time.Second,
		MinBackoff:        30 * time.Millisecond,
		MaxBackoff:        5 * time.Second,
		RetryOnHTTP429:    true,
		MaxRetryDuration:  0, // retried until the queue must make room
	}, rw.QueueConfig)
	require.Equal(t, queue.DefaultQueueConfig, rw.QueueConfig, "the example shows the defaults")

	auth := rw.HTTPClientConfig.Authorization
	require.NotNil(t, auth)
	require.Equal(t, "Bearer", auth.Type)
	require.Equal(t, "/var/run/secrets/remote-write/token", auth.CredentialsFile)
	require.True(t, filepath.IsAbs(auth.CredentialsFile))
	require.Nil(t, rw.HTTPClientConfig.BasicAuth)
	require.Len(t, rw.WriteRelabelConfigs, 2)
	require.Equal(t, relabel.Drop, rw.WriteRelabelConfigs[0].Action)
	require.True(t, rw.WriteRelabelConfigs[0].Regex.MatchString("kube_pod_container_status_last_terminated_reason"))
	require.Equal(t, relabel.LabelDrop, rw.WriteRelabelConfigs[1].Action)
	require.Equal(t, "/etc/kube-state-push/ca.crt", rw.HTTPClientConfig.TLSConfig.CAFile)
	require.False(t, rw.HTTPClientConfig.TLSConfig.InsecureSkipVerify)
}

func TestLoadFileRelativePaths(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "kube-state-push.yaml"), `
remote_write:
  - url: https://receiver:9090/api/v1/write
    authorization:
      credentials_file: secrets/token
    tls_config:
      ca_file: ca.crt
`)
	// A relative path to the config file still gives absolute paths.
	t.Chdir(dir)
	cfg, err := LoadFile("kube-state-push.yaml")
	require.NoError(t, err)
	hc := cfg.RemoteWrite[0].HTTPClientConfig
	require.Equal(t, filepath.Join(dir, "secrets", "token"), hc.Authorization.CredentialsFile)
	require.Equal(t, "Bearer", hc.Authorization.Type, "prometheus/common's default type")
	require.Equal(t, filepath.Join(dir, "ca.crt"), hc.TLSConfig.CAFile)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.TrimPrefix(data, "\n")), 0o600))
}

func TestDefaults(t *testing.T) {
	t.Run("only a url", func(t *testing.T) {
		cfg, err := Load([]byte("remote_write:\n  - url: http://receiver:9090/api/v1/write\n"), "min.yaml")
		require.NoError(t, err)

		require.Equal(t, watch.DefaultResources, cfg.Watch.Resources)
		require.Empty(t, cfg.Watch.Kubeconfig)
		require.Equal(t, 30*time.Second, cfg.SnapshotInterval)
		require.Equal(t, ":8080", cfg.ListenAddress)
		require.Equal(t, 30*time.Second, cfg.ShutdownTimeout)
		require.Empty(t, cfg.ExternalLabels)

		require.Len(t, cfg.RemoteWrite, 1)
		rw := cfg.RemoteWrite[0]
		require.Equal(t, "receiver:9090", rw.Name, "the URL's host")
		require.Empty(t, rw.Headers)
		require.Equal(t, 30*time.Second, rw.RemoteTimeout)
		// TestExampleConfig pins DefaultQueueConfig to Prometheus' values.
		require.Equal(t, queue.DefaultQueueConfig, rw.QueueConfig)
		require.True(t, rw.HTTPClientConfig.FollowRedirects, "prometheus/common's default")
		require.False(t, rw.HTTPClientConfig.EnableHTTP2, "Prometheus' remote-write default")
		require.Nil(t, rw.HTTPClientConfig.Authorization)
		require.Nil(t, rw.HTTPClientConfig.BasicAuth)
	})

	t.Run("keys left out of a block keep their defaults", func(t *testing.T) {
		cfg, err := Load([]byte(`
snapshot_interval: 1m
remote_write:
  - url: http://a:9090/api/v1/write
    queue_config:
      max_shards: 8
      retry_on_http_429: false
  - url: http://b:9090/api/v1/write
    remote_timeout: 5s
`), "partial.yaml")
		require.NoError(t, err)
		require.Equal(t, time.Minute, cfg.SnapshotInterval)
		require.Equal(t, ":8080", cfg.ListenAddress)

		want := queue.DefaultQueueConfig
		want.MaxShards = 8
		want.RetryOnHTTP429 = false
		require.Equal(t, want, cfg.RemoteWrite[0].QueueConfig)
		require.Equal(t, 30*time.Second, cfg.RemoteWrite[0].RemoteTimeout)

		require.Equal(t, queue.DefaultQueueConfig, cfg.RemoteWrite[1].QueueConfig)
		require.Equal(t, 5*time.Second, cfg.RemoteWrite[1].RemoteTimeout)
		require.Equal(t, "b:9090", cfg.RemoteWrite[1].Name)
	})

	t.Run("resources absent, null or empty", func(t *testing.T) {
		const rest = "custom_resource_state: {spec: {resources: []}}\nremote_write:\n  - url: http://a:9090/\n"
		for text, want := range map[string][]string{
			"":                watch.DefaultResources,
			"resources:\n":    watch.DefaultResources,
			"resources: []\n": {},
		} {
			cfg, err := Load([]byte(text+rest), "r.yaml")
			require.NoError(t, err, text)
			require.Equal(t, want, cfg.Watch.Resources, text)
			out, err := cfg.Effective()
			require.NoError(t, err)
			back, err := Load(out, "effective.yaml")
			require.NoError(t, err, "%s", out)
			require.Equal(t, want, back.Watch.Resources, "the effective config loads back the same resources:\n%s", out)
		}
	})

	t.Run("defaults are not shared between loads", func(t *testing.T) {
		_, err := Load([]byte("resources: [pods]\nremote_write:\n  - url: http://a:9090/\n    headers: {X-A: b}\n"), "a.yaml")
		require.NoError(t, err)
		cfg, err := Load([]byte("remote_write:\n  - url: http://a:9090/\n"), "b.yaml")
		require.NoError(t, err)
		require.Empty(t, cfg.RemoteWrite[0].Headers)
		require.Equal(t, watch.DefaultResources, cfg.Watch.Resources)
		require.Empty(t, DefaultConfig.Watch.Resources)
		require.Empty(t, queue.DefaultConfig.Headers)
	})
}

// badConfigs pairs each testdata/<name>.bad.yaml with the error it must give:
// "<name>.bad.yaml:<line>: <key>: <message>".
var badConfigs = map[string]string{
	"unknown_top_key":              `unknown_top_key.bad.yaml:3: snapshot_intervall: unknown key`,
	"unknown_queue_key":            `unknown_queue_key.bad.yaml:6: remote_write[0].queue_config.max_samples: unknown key`,
	"unknown_resource":             `unknown_resource.bad.yaml:4: resources[2]: unknown resource "widgets"`,
	"duplicate_resource":           `duplicate_resource.bad.yaml:4: resources[2]: resource "pods" is listed twice`,
	"snapshot_interval_zero":       `snapshot_interval_zero.bad.yaml:3: snapshot_interval: must be at least 1s, not 0s`,
	"read_batching":                `read_batching.bad.yaml:3: kube_api_read_batching: must be at least 0, not -1s`,
	"external_label_name":          `external_label_name.bad.yaml:3: external_labels.1zone: "1zone" is not a valid label name`,
	"external_label_empty":         `external_label_empty.bad.yaml:3: external_labels.region: value is empty`,
	"no_remote_write":              `no_remote_write.bad.yaml:1: remote_write: at least one endpoint is required`,
	"url_missing":                  `url_missing.bad.yaml:3: remote_write[1].url: is required`,
	"url_scheme":                   `url_scheme.bad.yaml:3: remote_write[0].url: scheme must be http or https, not "ftp"`,
	"min_shards":                   `min_shards.bad.yaml:5: remote_write[0].queue_config.min_shards: 8 is more than max_shards 4`,
	"capacity":                     `capacity.bad.yaml:5: remote_write[0].queue_config.capacity: 1000 is less than max_samples_per_send 5000`,
	"min_backoff":                  `min_backoff.bad.yaml:4: remote_write[0].queue_config.min_backoff: must be positive, not -30ms`,
	"duplicate_endpoint":           `duplicate_endpoint.bad.yaml:5: remote_write[1].name: "central" is also the name of remote_write[0]`,
	"protocol_header":              `protocol_header.bad.yaml:5: remote_write[0].headers.Content-Type: "Content-Type" is set by the Remote-Write protocol`,
	"two_auths":                    `two_auths.bad.yaml:2: remote_write[0]: at most one of basic_auth, oauth2 & authorization must be configured`,
	"wrong_type":                   "wrong_type.bad.yaml:3: snapshot_interval: cannot unmarshal !!str `abc` into time.Duration",
	"syntax":                       `syntax.bad.yaml:3: did not find expected key`,
	"syntax_tab":                   `syntax_tab.bad.yaml:4: found character that cannot start any token`,
	"bad_regex":                    "bad_regex.bad.yaml:4: metric_allowlist[1]: invalid regular expression \"kube_pod_(status\": error parsing regexp: missing closing ): `kube_pod_(status`",
	"both_lists":                   `both_lists.bad.yaml:3: metric_denylist: metric_allowlist and metric_denylist are mutually exclusive: set only one`,
	"allowlist_resource":           `allowlist_resource.bad.yaml:4: metric_labels_allowlist.widgets: unknown resource "widgets"`,
	"allowlist_wildcards":          `allowlist_wildcards.bad.yaml:3: metric_labels_allowlist.pods[1]: "team-*-x*" has more than one wildcard`,
	"shard_range":                  `shard_range.bad.yaml:3: shard: must be in [0, total_shards) = [0, 2), not 2`,
	"relabel_action":               `relabel_action.bad.yaml:4: remote_write[0].write_relabel_configs[0]: unknown relabel action "dropp"`,
	"relabel_regex":                "relabel_regex.bad.yaml:7: remote_write[1].write_relabel_configs[1]: error parsing regexp: missing closing ): `^(?s:kube_(pod)$`",
	"relabel_target":               `relabel_target.bad.yaml:4: remote_write[0].write_relabel_configs[0]: relabel configuration for replace action requires 'target_label' value`,
	"external_label_env":           `external_label_env.bad.yaml:5: external_labels.__replica__: value is empty once environment variables are expanded (not set or empty: KSP_TEST_UNSET_VARIABLE)`,
	"external_label_reserved":      `external_label_reserved.bad.yaml:4: external_labels.__name__: "__name__" is not a valid label name`,
	"no_resources":                 `no_resources.bad.yaml:3: resources: is empty and there is no custom_resource_state: nothing to watch`,
	"disk_buffer_shared":           `disk_buffer_shared.bad.yaml:6: remote_write[1].disk_buffer.directory: "/var/lib/kube-state-push/./buffer/" of endpoint receiver-b:9090 is also the disk buffer directory of remote_write[0] (receiver-a:9090); give each endpoint a directory of its own`,
	"disk_buffer_nested":           `disk_buffer_nested.bad.yaml:6: remote_write[1].disk_buffer.directory: "/var/lib/kube-state-push/buffer" of endpoint receiver-b:9090 holds the disk buffer directory of remote_write[0] (receiver-a:9090); give each endpoint a directory of its own`,
	"backfill_resolution_lookback": `backfill_resolution_lookback.bad.yaml:4: remote_write[0].backfill_resolution: 10m0s is more than backfill_lookback_delta 5m0s: instant queries between the samples kept would miss series`,
	"backfill_resolution_memory":   `backfill_resolution_memory.bad.yaml:3: remote_write[0].backfill_resolution: thins the disk buffer's backlog: set disk_buffer.directory too`,
	"legacy_v1_unknown":            `legacy_v1_unknown.bad.yaml:3: legacy_v1_families[1]: unknown v1 family "kube_pod_container_resource_requests_cpu"`,
	// custom_resource_state, inline and in a file.
	"custom_resource_state_path":        `custom_resource_state_path.bad.yaml:13: custom_resource_state.spec.resources[0].metrics[0].each.gauge.path: invalid list lookup: [Ready]`,
	"custom_resource_state_unknown_key": `custom_resource_state_unknown_key.bad.yaml:7: custom_resource_state.spec.resources[0].metric: unknown key`,
	"custom_resource_state_type":        `custom_resource_state_type.bad.yaml:10: custom_resource_state.spec.resources[0].metrics[0].each.type: unknown metric type summary`,
	"custom_resource_state_file":        `custom_resource_state_file.bad.yaml:3: custom_resource_state: custom_resource_state_file.crs.yaml:4: spec.resources[0].groupVersionKind.group: group is required in the defined GVK /v1, Kind=Widget`,
}

func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".bad.yaml"))
	}
	require.ElementsMatch(t, names, mapKeys(badConfigs), "every bad config has its expected error")

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadFile(filepath.Join("testdata", name+".bad.yaml"))
			require.Nil(t, cfg)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "testdata/"+badConfigs[name]),
				"error\n\t%s\nshould start with\n\ttestdata/%s", msg, badConfigs[name])
			require.NotContains(t, msg, "\n", "one problem, one error")
		})
	}
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := Load([]byte(`resources: [pods, gadgets]
snapshot_interval: 100ms
remote_write:
  - url: ftp://a/
    queue_config:
      min_shards: 0
  - url: http://b:9090/
    remote_timeout: 0s
`), "many.yaml")
	require.Error(t, err)
	require.Equal(t, []string{
		`many.yaml:1: resources[1]: unknown resource "gadgets" (known: ` + strings.Join(watch.Names(), ", ") + `)`,
		`many.yaml:2: snapshot_interval: must be at least 1s, not 100ms`,
		`many.yaml:4: remote_write[0].url: scheme must be http or https, not "ftp"`,
		`many.yaml:6: remote_write[0].queue_config.min_shards: must be at least 1, not 0`,
		`many.yaml:8: remote_write[1].remote_timeout: must be positive, not 0s`,
	}, strings.Split(err.Error(), "\n"))
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "reading config")
}

// External label values expand environment variables as Prometheus'
// expand-external-labels does, and __replica__ is the one reserved name
// allowed, for Mimir's and Cortex's HA deduplication.
func TestExternalLabelsExpandEnv(t *testing.T) {
	t.Setenv("KSP_TEST_POD", "kube-state-push-7d9f-x2v")
	t.Setenv("KSP_TEST_REGION", "eu-west-1")
	t.Setenv("KSP_TEST_EMPTY", "")
	cfg, err := Load([]byte(`
external_labels:
  __replica__: ${KSP_TEST_POD}
  region: $KSP_TEST_REGION
  zone: ${KSP_TEST_REGION}a
  price: $$5-${KSP_TEST_EMPTY}
  literal: no-variables
remote_write:
  - url: http://receiver:9090/api/v1/write
`), "env.yaml")
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"__replica__": "kube-state-push-7d9f-x2v",
		"region":      "eu-west-1",
		"zone":        "eu-west-1a",
		"price":       "$5-",
		"literal":     "no-variables",
	}, cfg.ExternalLabels)

	// Every label left empty is reported once, with its line and the
	// variables; other problems are still reported.
	_, err = Load([]byte(`external_labels:
  cluster: ${KSP_TEST_EMPTY}
  __replica__: ${KSP_TEST_UNSET_A}$KSP_TEST_UNSET_B
  __tenant__: x
remote_write:
  - url: http://receiver:9090/api/v1/write
`), "env.yaml")
	require.Error(t, err)
	require.Equal(t, []string{
		`env.yaml:3: external_labels.__replica__: value is empty once environment variables are expanded (not set or empty: KSP_TEST_UNSET_A, KSP_TEST_UNSET_B)`,
		`env.yaml:2: external_labels.cluster: value is empty once environment variables are expanded (not set or empty: KSP_TEST_EMPTY)`,
		`env.yaml:4: external_labels.__tenant__: "__tenant__" is not a valid label name`,
	}, strings.Split(err.Error(), "\n"))
}

// write_relabel_configs load as Prometheus reads them, defaults included, and
// print back in the effective configuration.
func TestWriteRelabelConfigs(t *testing.T) {
	cfg, err := Load([]byte(`
remote_write:
  - url: http://receiver:9090/api/v1/write
    write_relabel_configs:
      - source_labels: [__name__]
        regex: kube_pod_container_.*
        action: drop
      - action: labeldrop
        regex: uid
      - source_labels: [node]
        target_label: host
`), "relabel.yaml")
	require.NoError(t, err)
	rcs := cfg.RemoteWrite[0].WriteRelabelConfigs
	require.Len(t, rcs, 3)
	require.Equal(t, relabel.Drop, rcs[0].Action)
	require.True(t, rcs[0].Regex.MatchString("kube_pod_container_info"))
	require.False(t, rcs[0].Regex.MatchString("kube_pod_info"), "anchored, as in Prometheus")
	require.Equal(t, relabel.LabelDrop, rcs[1].Action)
	require.Equal(t, relabel.Replace, rcs[2].Action, "the default action")
	require.Equal(t, "$1", rcs[2].Replacement)
	require.Equal(t, model.LegacyValidation, rcs[2].NameValidationScheme, "set by Validate, needed by relabel.Process")

	out, err := cfg.Effective()
	require.NoError(t, err)
	back, err := Load(out, "effective.yaml")
	require.NoError(t, err, "%s", out)
	require.Len(t, back.RemoteWrite[0].WriteRelabelConfigs, 3)
	require.Equal(t, "kube_pod_container_.*", back.RemoteWrite[0].WriteRelabelConfigs[0].Regex.String())
}

// TestReadBatchingDefault: the API server reads are batched by a second by
// default, by at most a tenth of snapshot_interval, and not at all with 0.
func TestReadBatchingDefault(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
	}{
		{"", time.Second},
		{"snapshot_interval: 1s\n", 100 * time.Millisecond},
		{"kube_api_read_batching: 3s\nsnapshot_interval: 1m\n", 3 * time.Second},
		{"kube_api_read_batching: 0s\n", 0},
	} {
		cfg, err := Load([]byte(c.text+"remote_write:\n  - url: http://a:9090/\n"), "a.yaml")
		require.NoError(t, err)
		require.Equal(t, c.want, cfg.ReadBatching(), "%q", c.text)
	}
}
