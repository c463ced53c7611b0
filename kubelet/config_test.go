package kubelet_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/kubelet"
)

// badConfigs pairs each testdata/<name>.bad.yaml with the error it must
// give, loaded as a whole agent configuration: "<file>:<line>: <key>: <message>".
var badConfigs = map[string]string{
	"mode":                  `mode.bad.yaml:4: kubelet.mode: must be "direct" or "apiserver", not "proxy"`,
	"path":                  `path.bad.yaml:6: kubelet.paths[1].path: must be one of /metrics/cadvisor, /metrics/resource, /metrics, not "/metrics/probes"`,
	"both_lists":            `both_lists.bad.yaml:7: kubelet.paths[0].metric_denylist: metric_allowlist and metric_denylist are mutually exclusive: set only one`,
	"bad_regex":             `bad_regex.bad.yaml:8: kubelet.paths[0].metric_denylist[1]: invalid regular expression "container_(cpu": error parsing regexp: missing closing ): ` + "`container_(cpu`",
	"unknown_key":           `unknown_key.bad.yaml:5: kubelet.intervall: unknown key`,
	"timeout":               `timeout.bad.yaml:5: kubelet.timeout: 20s is longer than interval 15s: reads would overlap`,
	"no_nodes":              `no_nodes.bad.yaml:4: kubelet: needs the nodes resource in resources: the nodes to read come from its watch`,
	"target_label_reserved": `target_label_reserved.bad.yaml:5: kubelet.target_labels.node: "node" is set by the agent itself`,
	"duplicate_path":        `duplicate_path.bad.yaml:7: kubelet.paths[2].path: "/metrics/cadvisor" is also paths[0]`,
	"keep_empty":            `keep_empty.bad.yaml:6: kubelet.paths[0].keep_empty_container: applies only to /metrics/cadvisor`,
	"concurrency":           `concurrency.bad.yaml:4: kubelet.concurrency: must be at least 1, not 0`,
	"token_over_http":       `token_over_http.bad.yaml:4: kubelet.scheme: http sends bearer_token_file's token in clear text: set allow_token_over_unverified_connection: true to accept that, or bearer_token_file: "" to send none`,
	"token_unverified":      `token_unverified.bad.yaml:5: kubelet.tls_config.insecure_skip_verify: true sends bearer_token_file's token to any server on a node's address: set allow_token_over_unverified_connection: true to accept that, or bearer_token_file: "" to send none`,
	"address_type":          `address_type.bad.yaml:4: kubelet.address_types[1]: must be one of InternalIP, ExternalIP, InternalDNS, ExternalDNS, Hostname, not "PublicIP"`,
	"sample_limit":          `sample_limit.bad.yaml:4: kubelet.sample_limit: must be 0 (no limit) or more, not -1`,
	"family_kube":           `family_kube.bad.yaml:4: kubelet.family_prefixes[1]: "kube_pod_" never passes: kube_ series are the agent's own`,
	"body_size_limit":       `body_size_limit.bad.yaml:4: kubelet.body_size_limit: must be at least 1024 bytes, not 100`,
}

func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.bad.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".bad.yaml"))
	}
	want := make([]string, 0, len(badConfigs))
	for k := range badConfigs {
		want = append(want, k)
	}
	require.ElementsMatch(t, want, names, "every bad config has its expected error")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.LoadFile(filepath.Join("testdata", name+".bad.yaml"))
			require.Nil(t, cfg)
			require.Error(t, err)
			require.Equal(t, "testdata/"+badConfigs[name], err.Error())
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	data := []byte("remote_write:\n  - url: http://receiver.example/api/v1/write\nsnapshot_interval: 20s\nkubelet: {}\n")
	cfg, err := config.Load(data, "inline.yaml")
	require.NoError(t, err)
	k := cfg.Kubelet
	require.NotNil(t, k)
	require.Equal(t, kubelet.ModeDirect, k.Mode)
	require.Equal(t, 20*time.Second, k.Interval, "interval defaults to snapshot_interval")
	require.Equal(t, 10*time.Second, k.Timeout)
	require.Equal(t, 10, k.Concurrency)
	require.Equal(t, "https", k.Scheme)
	require.Equal(t, "kubelet", k.Job)
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", k.BearerTokenFile)
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", k.TLSConfig.CAFile)
	require.Equal(t, []kubelet.PathConfig{{Path: kubelet.PathCadvisor}}, stripped(k.Paths))
	require.Equal(t, map[string]string{"endpoint": "https-metrics", "namespace": "kube-system", "service": "kube-prometheus-stack-kubelet"}, k.TargetLabels)
	require.False(t, k.AllowTokenOverUnverifiedConnection)
	require.False(t, k.UnverifiedToken(), "the token goes only to kubelets whose certificate verifies")
	require.Equal(t, []string{"InternalIP", "ExternalIP", "Hostname"}, k.AddressTypes, "prometheus-operator's order")
	require.Equal(t, int64(16<<20), k.BodySizeLimit)
	require.Equal(t, 100_000, k.SampleLimit)
	require.Zero(t, k.LabelLimit+k.LabelNameLengthLimit+k.LabelValueLengthLimit, "label limits off, as in Prometheus")
	require.Equal(t, kubelet.DefaultFamilyPrefixes, k.FamilyPrefixes)
	require.Equal(t, 10*time.Minute, k.MaxSampleAge)
	require.Equal(t, 10*time.Minute, k.MaxSampleFuture)

	// Off unless the section is there.
	cfg, err = config.Load([]byte("remote_write:\n  - url: http://receiver.example/api/v1/write\n"), "inline.yaml")
	require.NoError(t, err)
	require.Nil(t, cfg.Kubelet)
}

// Sending the token where the kubelet is not verified, or sending none
// over plain HTTP, loads when the operator says so.
func TestConfigUnverifiedTokenOptIn(t *testing.T) {
	for name, section := range map[string]string{
		"http, accepted":                 "scheme: http\n  allow_token_over_unverified_connection: true",
		"insecure_skip_verify, accepted": "tls_config: {insecure_skip_verify: true}\n  allow_token_over_unverified_connection: true",
		"http without a token":           "scheme: http\n  bearer_token_file: \"\"",
		"apiserver mode ignores scheme":  "mode: apiserver\n  scheme: http",
	} {
		t.Run(name, func(t *testing.T) {
			data := "remote_write:\n  - url: http://receiver.example/api/v1/write\nkubelet:\n  " + section + "\n"
			cfg, err := config.Load([]byte(data), "inline.yaml")
			require.NoError(t, err, "%s", data)
			require.Equal(t, cfg.Kubelet.AllowTokenOverUnverifiedConnection, cfg.Kubelet.UnverifiedToken())
		})
	}
}

func TestConfigGoodLoadsBack(t *testing.T) {
	cfg, err := config.LoadFile(filepath.Join("testdata", "good.yaml"))
	require.NoError(t, err)
	require.Equal(t, kubelet.ModeAPIServer, cfg.Kubelet.Mode)
	require.Equal(t, 20*time.Second, cfg.Kubelet.Interval)
	paths := stripped(cfg.Kubelet.Paths)
	require.Equal(t, []string{"/metrics/cadvisor", "/metrics/resource", "/metrics"}, pathNames(paths))
	out, err := cfg.Effective()
	require.NoError(t, err)
	dir := t.TempDir()
	f := filepath.Join(dir, "effective.yaml")
	require.NoError(t, os.WriteFile(f, out, 0o600))
	again, err := config.LoadFile(f)
	require.NoError(t, err, "effective config:\n%s", out)
	require.Equal(t, paths, stripped(again.Kubelet.Paths))
	require.Equal(t, cfg.Kubelet.Interval, again.Kubelet.Interval)
}

// stripped returns the paths without their compiled lists, for comparison.
func stripped(ps []kubelet.PathConfig) []kubelet.PathConfig {
	out := make([]kubelet.PathConfig, len(ps))
	for i, p := range ps {
		out[i] = kubelet.PathConfig{Path: p.Path, MetricAllowlist: p.MetricAllowlist, MetricDenylist: p.MetricDenylist, KeepEmptyContainer: p.KeepEmptyContainer}
	}
	return out
}

func pathNames(ps []kubelet.PathConfig) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Path)
	}
	return slices.Clip(out)
}

// The commented kubelet block of the root config.yaml loads once
// uncommented, so the example cannot rot.
func TestExampleConfigBlock(t *testing.T) {
	data, err := os.ReadFile("../config.yaml")
	require.NoError(t, err)
	var block []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "# kubelet:":
			in = true
		case in && !strings.HasPrefix(line, "#"):
			in = false
		}
		if in {
			block = append(block, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		}
	}
	require.NotEmpty(t, block)
	text := "remote_write:\n  - url: http://receiver.example/api/v1/write\n" + strings.Join(block, "\n") + "\n"
	cfg, err := config.Load([]byte(text), "config.yaml")
	require.NoError(t, err, "%s", text)
	require.Equal(t, kubelet.ModeDirect, cfg.Kubelet.Mode)
	require.Equal(t, []string{"/metrics/cadvisor"}, pathNames(cfg.Kubelet.Paths))
	require.Equal(t, []string{"container_tasks_state"}, cfg.Kubelet.Paths[0].MetricDenylist)
}

// File paths in the section are relative to the configuration file, as
// remote_write's are; absolute ones and the defaults stay.
func TestConfigRelativePaths(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(f, []byte("remote_write:\n  - url: http://receiver.example/api/v1/write\nkubelet:\n  bearer_token_file: token\n  tls_config: {ca_file: certs/ca.crt}\n"), 0o600))
	cfg, err := config.LoadFile(f)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "token"), cfg.Kubelet.BearerTokenFile)
	require.Equal(t, filepath.Join(dir, "certs/ca.crt"), cfg.Kubelet.TLSConfig.CAFile)

	require.NoError(t, os.WriteFile(f, []byte("remote_write:\n  - url: http://receiver.example/api/v1/write\nkubelet: {}\n"), 0o600))
	cfg, err = config.LoadFile(f)
	require.NoError(t, err)
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", cfg.Kubelet.BearerTokenFile)
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", cfg.Kubelet.TLSConfig.CAFile)
}
