package kubelet

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// A body cannot set the labels the agent owns, nor forge state series or
// families that are not the kubelet's; each drop is counted.
func TestRenderConfinesForgedSeries(t *testing.T) {
	const forged = `kube_pod_status_ready{namespace="kube-system",pod="coredns",condition="true"} 1
up 1
haproxy_up{version="1"} 1
container_memory_rss{job="forged",node="victim",instance="1.2.3.4:1",metrics_path="/x",cluster="other",exported_job="taken",namespace="shop",container="app"} 5
kubelet_node_name{node="n1"} 1
container_memory_rss{container="ns-less",namespace=""} 6
`
	p := &PathConfig{Path: PathKubelet}
	require.NoError(t, p.validate())
	set, counts, err := newRenderer().render([]byte(forged), testTarget(p), 42)
	require.NoError(t, err)
	const own = `instance="10.0.0.1:10250",job="kubelet",metrics_path="/metrics"`
	want := []string{
		// The owned labels win; the body's move to exported_, prefixed
		// again where exported_job is taken, as Prometheus names them.
		`container_memory_rss{cluster="c1",container="app",exported_cluster="other",exported_exported_job="forged",exported_instance="1.2.3.4:1",exported_job="taken",exported_metrics_path="/x",exported_node="victim",` + own + `,namespace="shop",node="n1"} 5 42`,
		// The kubelet's own node label, the same as the target's, stays.
		`kubelet_node_name{cluster="c1",` + own + `,namespace="kube-system",node="n1"} 1 42`,
		// An empty namespace in the body still keeps the target's out.
		`container_memory_rss{cluster="c1",container="ns-less",` + own + `,node="n1"} 6 42`,
	}
	sort.Strings(want)
	if d := cmp.Diff(want, text(t, set)); d != "" {
		t.Fatalf("series (-want +got):\n%s", d)
	}
	require.Equal(t, 1, counts.dropped[dropKube], "kube_pod_status_ready")
	require.Equal(t, 2, counts.dropped[dropFamily], "up and haproxy_up")
}

// Only samples within max_sample_age and max_sample_future of the read
// are kept.
func TestRenderTimestampWindow(t *testing.T) {
	p := &PathConfig{Path: PathKubelet}
	require.NoError(t, p.validate())
	tg := testTarget(p)
	tg.minT, tg.maxT = 1000, 2000
	body := "kubelet_a 1 999\nkubelet_b 1 1000\nkubelet_c 1 2000\nkubelet_d 1 2001\nkubelet_e 1\n"
	set, counts, err := newRenderer().render([]byte(body), tg, 1500)
	require.NoError(t, err)
	require.Len(t, text(t, set), 3, "b, c and e (the read's time)")
	require.Equal(t, 1, counts.dropped[dropTooOld])
	require.Equal(t, 1, counts.dropped[dropTooNew])
}

// The limits fail the whole read, as in Prometheus: nothing of the body
// is kept. sample_limit counts the samples the filters keep.
func TestRenderLimits(t *testing.T) {
	p := &PathConfig{Path: PathKubelet, MetricDenylist: []string{"^kubelet_filtered$"}}
	require.NoError(t, p.validate())
	three := "kubelet_a 1\nkubelet_filtered 1\nkubelet_b 1\nnot_kubelet 1\nkubelet_c{l=\"abcdefgh\"} 1\n"
	for _, tc := range []struct {
		name   string
		cfg    Config
		err    error
		reason string
	}{
		{"sample_limit at the kept count", Config{SampleLimit: 3}, nil, ""},
		{"sample_limit below", Config{SampleLimit: 2}, ErrSampleLimit, ReasonSampleLimit},
		// 5 owned labels, __name__ and l: 7 (honored namespace too: 8).
		{"label_limit at the count", Config{LabelLimit: 8}, nil, ""},
		{"label_limit below", Config{LabelLimit: 7}, ErrLabelLimit, ReasonLabelLimit},
		{"label_value_length_limit at the length", Config{LabelValueLengthLimit: 14}, nil, ""}, // instance's 14 bytes
		{"label_value_length_limit below", Config{LabelValueLengthLimit: 13}, ErrLabelLimit, ReasonLabelLimit},
		{"label_name_length_limit", Config{LabelNameLengthLimit: 8}, ErrLabelLimit, ReasonLabelLimit}, // __name__ is 8, metrics_path 12
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.FamilyPrefixes = DefaultFamilyPrefixes
			set, _, err := newRenderer().render([]byte(three), testTargetWith(p, &tc.cfg), 42)
			if tc.err == nil {
				require.NoError(t, err)
				require.Equal(t, 3, set.Len())
				return
			}
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.reason, reasonOf(err))
			require.Zero(t, set.Len(), "no prefix of a failed body is kept")
		})
	}
}

// Every family a hollow kubelet serves on its four metrics paths, and
// every family of the recorded cAdvisor body, passes the default
// family_prefixes.
func TestDefaultFamilyPrefixesPassTheKubelets(t *testing.T) {
	names := map[string]string{}
	f, err := os.Open(filepath.Join("testdata", "kubelet-families.txt"))
	require.NoError(t, err)
	defer f.Close()
	path := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "/"):
			path = line
		case strings.TrimSpace(line) != "":
			names[strings.TrimSpace(line)] = path
		}
	}
	require.NoError(t, sc.Err())
	cadvisor, err := os.ReadFile(filepath.Join("testdata", "cadvisor-30containers.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(cadvisor), "\n") {
		if name, _, ok := strings.Cut(line, "{"); ok && !strings.HasPrefix(line, "#") {
			names[name] = "/metrics/cadvisor"
		}
	}
	require.Greater(t, len(names), 250)
	r := newRenderer()
	for name, path := range names {
		require.Equal(t, -1, r.familyDrop(name, DefaultFamilyPrefixes), "%s of %s", name, path)
	}
	// And what kube-prometheus' kubelet dashboards and alerts read beyond
	// the hollow kubelet's.
	for _, name := range []string{"kubelet_volume_stats_available_bytes", "storage_operation_duration_seconds_count", "volume_manager_total_volumes",
		"rest_client_requests_total", "prober_probe_total", "kubernetes_build_info", "pod_cpu_usage_seconds_total", "csi_operations_seconds_count",
		"plugin_manager_total_plugins"} {
		require.Equal(t, -1, r.familyDrop(name, DefaultFamilyPrefixes), name)
	}
	require.Equal(t, dropKube, r.familyDrop("kube_node_info", DefaultFamilyPrefixes))
	require.Equal(t, dropKube, r.familyDrop("kube_node_info", []string{""}), "kube_ never passes")
	require.Equal(t, dropFamily, r.familyDrop("up", DefaultFamilyPrefixes))
}
