package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/queue"
)

// prometheusExamples pairs each file of testdata/prometheus (remote_write
// blocks of Prometheus v0.316.0's own config/testdata, its example agent
// configuration and its configuration reference; each file names its
// source) with the errors our loader gives it, one per line, after the
// file name, and why. No errors: it loads.
var prometheusExamples = map[string]struct {
	errs []string
	why  string
}{
	"agent_mode.good.yml":           {},
	"conf.good.yml":                 {},
	"prometheus-agent.yml":          {},
	"configuration_md_all_keys.yml": {},

	// The managed receivers (queue/managed.go).
	"managed_receivers_sigv4.yml":      {},
	"managed_receivers_azuread.yml":    {},
	"managed_receivers_google_iam.yml": {},

	// Loads in Prometheus, which parses localhost:9090 as a URL of scheme
	// "localhost" and could never send to it; we refuse it when loading.
	"remote_write_retry_on_rate_limit.good.yml": {why: "url without http or https", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not "localhost"`,
		`7: remote_write[1].url: scheme must be http or https, not "localhost"`,
	}},

	// Refused by Prometheus too: here for the same reason (and for their
	// url, localhost:9090, as above).
	"empty_rw_config.bad.yml": {why: "empty entry", errs: []string{
		"3: remote_write: at least one endpoint is required",
	}},
	"empty_rw_relabel_config.bad.yml": {why: "empty relabel rule", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not ""`,
		"6: remote_write[0].write_relabel_configs[0]: is empty: give each rule at least an action",
	}},
	"remote_write_authorization_header.bad.yml": {why: "Authorization header", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not "localhost"`,
		"7: remote_write[0].headers.authorization: use basic_auth, authorization, oauth2, sigv4, azuread or google_iam instead of an Authorization header",
	}},
	// The duplicate name is not checked once the urls are refused.
	"remote_write_dup.bad.yml": {why: "duplicate name", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not "localhost"`,
		`6: remote_write[1].url: scheme must be http or https, not "localhost"`,
	}},
	"remote_write_header.bad.yml": {why: "protocol header", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not "localhost"`,
		`7: remote_write[0].headers.x-prometheus-remote-write-version: "x-prometheus-remote-write-version" is set by the Remote-Write protocol and cannot be configured`,
	}},
	"remote_write_queue_capacity_zero.bad.yml": {why: "queue_config", errs: []string{
		"6: remote_write[0].queue_config.capacity: must be at least 1, not 0",
	}},
	"remote_write_queue_max_backoff_less_than_min.bad.yml": {why: "queue_config", errs: []string{
		"7: remote_write[0].queue_config.max_backoff: 1s is less than min_backoff 10s",
	}},
	"remote_write_queue_max_samples_per_send_zero.bad.yml": {why: "queue_config", errs: []string{
		"6: remote_write[0].queue_config.max_samples_per_send: must be at least 1, not 0",
	}},
	"remote_write_queue_max_shards_zero.bad.yml": {why: "queue_config", errs: []string{
		"6: remote_write[0].queue_config.max_shards: must be at least 1, not 0",
	}},
	"remote_write_queue_min_shards_greater_than_max.bad.yml": {why: "queue_config", errs: []string{
		"6: remote_write[0].queue_config.min_shards: 100 is more than max_shards 10",
	}},
	"remote_write_queue_min_shards_zero.bad.yml": {why: "queue_config", errs: []string{
		"6: remote_write[0].queue_config.min_shards: must be at least 1, not 0",
	}},
	"remote_write_url_missing.bad.yml": {why: "no url", errs: []string{
		"4: remote_write[0].url: is required",
	}},
	"remote_write_wrong_msg.bad.yml": {why: "protobuf_message", errs: []string{
		`4: remote_write[0].url: scheme must be http or https, not "localhost"`,
		`5: remote_write[0].protobuf_message: must be "prometheus.WriteRequest" or "io.prometheus.write.v2.Request", not "io.prometheus.writet.v2.Request"`,
	}},
}

// Prometheus' own remote_write examples load through our loader, or fail
// only as listed: on a url Prometheus could not send to, or where
// Prometheus refuses them too.
func TestPrometheusRemoteWriteExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/prometheus/*.yml")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, keysOf(prometheusExamples), names, "every example has its expectation")

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			want := prometheusExamples[name]
			path := filepath.Join("testdata", "prometheus", name)
			cfg, err := LoadFile(path)
			if len(want.errs) == 0 {
				require.NoError(t, err)
				require.NotEmpty(t, cfg.RemoteWrite)
				return
			}
			require.Error(t, err, want.why)
			var got []string
			for _, l := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimPrefix(l, path+":"))
			}
			require.ElementsMatch(t, want.errs, got, want.why)
		})
	}
}

// The values of Prometheus' examples arrive where they should.
func TestPrometheusRemoteWriteExampleValues(t *testing.T) {
	cfg, err := LoadFile("testdata/prometheus/conf.good.yml")
	require.NoError(t, err)
	require.Len(t, cfg.RemoteWrite, 2)
	require.Equal(t, "drop_expensive", cfg.RemoteWrite[0].Name)
	require.Equal(t, "123", cfg.RemoteWrite[0].HTTPClientConfig.OAuth2.ClientID)
	require.Equal(t, queue.ProtoV2, cfg.RemoteWrite[1].ProtobufMessage)
	require.True(t, cfg.RemoteWrite[1].ConvertNHCBToClassic)
	require.Equal(t, map[string]string{"name": "value"}, cfg.RemoteWrite[1].Headers)

	cfg, err = LoadFile("testdata/prometheus/managed_receivers_sigv4.yml")
	require.NoError(t, err)
	require.Equal(t, &queue.SigV4Config{}, cfg.RemoteWrite[0].SigV4Config)
	require.Equal(t, &queue.SigV4Config{
		Region: "us-east-1", AccessKey: "AKIDEXAMPLE", SecretKey: "example-secret",
		RoleARN: "arn:aws:iam::123456789012:role/prometheus",
	}, cfg.RemoteWrite[1].SigV4Config)
	cfg, err = LoadFile("testdata/prometheus/managed_receivers_azuread.yml")
	require.NoError(t, err)
	az := cfg.RemoteWrite[0].AzureADConfig
	require.Equal(t, "AzurePublic", az.Cloud)
	require.Equal(t, "00000000-0000-0000-0000-000000000000", az.OAuth.ClientID)
	require.Equal(t, "00000000-a12b-3cd4-e56f-000000000000", az.OAuth.TenantID)
	require.Equal(t, "Cl1ent$ecret!", string(az.OAuth.ClientSecret))
	cfg, err = LoadFile("testdata/prometheus/managed_receivers_google_iam.yml")
	require.NoError(t, err)
	require.Equal(t, "/etc/secrets/google.json", cfg.RemoteWrite[0].GoogleIAMConfig.CredentialsFile)

	cfg, err = LoadFile("testdata/prometheus/configuration_md_all_keys.yml")
	require.NoError(t, err)
	rw := cfg.RemoteWrite[0]
	require.True(t, rw.RoundRobinDNS)
	require.True(t, rw.FailedRequestLogging)
	require.True(t, rw.SendExemplars)
	require.True(t, rw.SendNativeHistograms)
	require.True(t, rw.HTTPClientConfig.EnableHTTP2)
	require.Equal(t, time.Hour, rw.QueueConfig.SampleAgeLimit)
	require.Equal(t, 500, rw.MetadataConfig.MaxSamplesPerSend)
	require.False(t, cfg.RemoteWrite[1].HTTPClientConfig.EnableHTTP2, "Prometheus' remote-write default")

	out, err := cfg.Effective()
	require.NoError(t, err)
	back, err := Load(out, "effective.yaml")
	require.NoError(t, err)
	require.Equal(t, cfg.RemoteWrite[0].RoundRobinDNS, back.RemoteWrite[0].RoundRobinDNS)
	require.Equal(t, cfg.RemoteWrite[0].FailedRequestLogging, back.RemoteWrite[0].FailedRequestLogging)
	require.True(t, back.RemoteWrite[0].HTTPClientConfig.EnableHTTP2)
}

// keysOf returns the keys of m.
func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
