package kubelet

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// body is the shape of a kubelet's /metrics/cadvisor: the node root,
// a system slice, a pod cgroup and its containers, with timestamps.
const body = `# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 120.5 1764600000123
container_cpu_usage_seconds_total{container="",cpu="total",id="/system.slice",image="",name="",namespace="",pod=""} 30 1764600000123
container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/podu1",image="",name="",namespace="shop",pod="web"} 4 1764600000123
container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/podu1/app",image="registry.example/app:1",name="app",namespace="shop",pod="web"} 3 1764600000123
# HELP container_memory_working_set_bytes Current working set in bytes.
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="",id="/",image="",name="",namespace="",pod=""} 2.147483648e+09 1764600000123
container_memory_working_set_bytes{container="app",id="/kubepods/podu1/app",image="registry.example/app:1",name="app",namespace="shop",pod="web"} 1.6777216e+07 1764600000123
# HELP container_network_receive_bytes_total Cumulative count of bytes received
# TYPE container_network_receive_bytes_total counter
container_network_receive_bytes_total{container="",id="/kubepods/podu1",image="",interface="eth0",name="",namespace="shop",pod="web"} 1000 1764600000123
container_network_receive_bytes_total{container="POD",id="/kubepods/podu1/pause",image="pause:3.10",interface="eth0",name="pause",namespace="shop",pod="web"} 1000 1764600000123
# HELP machine_cpu_cores Number of logical CPU cores.
# TYPE machine_cpu_cores gauge
machine_cpu_cores{boot_id="b",machine_id="",system_uuid=""} 4
`

// text writes a set as exposition lines, labels sorted, with timestamps.
func text(t *testing.T, set *encode.SeriesSet) []string {
	t.Helper()
	var out []string
	for i := range set.Refs {
		ls, err := encode.DecodeLabels(set.Labels(i))
		require.NoError(t, err)
		var parts []string
		name := ""
		for _, l := range ls {
			if l.Name == encode.MetricName {
				name = l.Value
				continue
			}
			parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
		}
		sort.Strings(parts)
		out = append(out, name+"{"+strings.Join(parts, ",")+"} "+strconv.FormatFloat(set.Refs[i].Value, 'f', -1, 64)+" "+strconv.FormatInt(set.Timestamps[i], 10))
	}
	sort.Strings(out)
	return out
}

func testTarget(p *PathConfig) *target {
	return testTargetWith(p, &Config{FamilyPrefixes: DefaultFamilyPrefixes})
}

// testTargetWith is the target of node n1 with cfg's limits and family
// prefixes, any timestamp kept.
func testTargetWith(p *PathConfig, cfg *Config) *target {
	return &target{path: p, cfg: cfg, owned: []encode.Label{
		{Name: "job", Value: "kubelet"}, {Name: "metrics_path", Value: p.Path},
		{Name: "node", Value: "n1"}, {Name: "instance", Value: "10.0.0.1:10250"}, {Name: "cluster", Value: "c1"},
	}, honored: []encode.Label{{Name: "namespace", Value: "kube-system"}}, minT: math.MinInt64, maxT: math.MaxInt64}
}

func TestRenderCadvisor(t *testing.T) {
	p := &PathConfig{Path: PathCadvisor}
	require.NoError(t, p.validate())
	set, counts, err := newRenderer().render([]byte(body), testTarget(p), 42)
	require.NoError(t, err)
	dropped := counts.filtered
	const tl = `instance="10.0.0.1:10250",job="kubelet",metrics_path="/metrics/cadvisor"`
	want := []string{
		// The node total is kept; its namespace="" wins over the
		// target's namespace, as with honor_labels.
		`container_cpu_usage_seconds_total{cluster="c1",cpu="total",id="/",` + tl + `,node="n1"} 120.5 1764600000123`,
		`container_cpu_usage_seconds_total{cluster="c1",container="app",cpu="total",id="/kubepods/podu1/app",image="registry.example/app:1",` + tl + `,name="app",namespace="shop",node="n1",pod="web"} 3 1764600000123`,
		`container_memory_working_set_bytes{cluster="c1",container="app",id="/kubepods/podu1/app",image="registry.example/app:1",` + tl + `,name="app",namespace="shop",node="n1",pod="web"} 16777216 1764600000123`,
		`container_memory_working_set_bytes{cluster="c1",id="/",` + tl + `,node="n1"} 2147483648 1764600000123`,
		`container_network_receive_bytes_total{cluster="c1",container="POD",id="/kubepods/podu1/pause",image="pause:3.10",instance="10.0.0.1:10250",interface="eth0",job="kubelet",metrics_path="/metrics/cadvisor",name="pause",namespace="shop",node="n1",pod="web"} 1000 1764600000123`,
		// Without a timestamp in the body: the read's time. Without a
		// namespace label: the target's.
		`machine_cpu_cores{boot_id="b",cluster="c1",` + tl + `,namespace="kube-system",node="n1"} 4 42`,
	}
	sort.Strings(want)
	if d := cmp.Diff(want, text(t, set)); d != "" {
		t.Fatalf("series (-want +got):\n%s", d)
	}
	require.Equal(t, 3, dropped, "the system slice, the pod cgroup's CPU and its network without image")
}

func TestRenderKeepsEmptyContainerWhenAsked(t *testing.T) {
	p := &PathConfig{Path: PathCadvisor, KeepEmptyContainer: true}
	require.NoError(t, p.validate())
	set, counts, err := newRenderer().render([]byte(body), testTarget(p), 42)
	require.NoError(t, err)
	require.Equal(t, 0, counts.filtered)
	require.Equal(t, 9, set.Len())
}

func TestRenderLists(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    PathConfig
		want int
	}{
		{"allowlist", PathConfig{Path: PathCadvisor, MetricAllowlist: []string{"container_memory_.*"}}, 2},
		{"denylist", PathConfig{Path: PathCadvisor, MetricDenylist: []string{"^container_"}}, 1},
		// Unanchored, as metric_allowlist: "cpu" matches inside names.
		{"unanchored", PathConfig{Path: PathCadvisor, MetricAllowlist: []string{"cpu"}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.p.validate())
			set, _, err := newRenderer().render([]byte(body), testTarget(&tc.p), 42)
			require.NoError(t, err)
			require.Equal(t, tc.want, set.Len(), "%v", text(t, set))
		})
	}
}

func TestRenderParseError(t *testing.T) {
	p := &PathConfig{Path: PathKubelet}
	require.NoError(t, p.validate())
	_, _, err := newRenderer().render([]byte("kubelet_running_pods{ 3\n"), testTarget(p), 42)
	require.ErrorIs(t, err, ErrParse)
	require.Equal(t, ReasonParse, reasonOf(err))
}
