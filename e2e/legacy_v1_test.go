package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// v1Mapping is kube-state-metrics' documented v1 to v2 mapping of the
// families legacy_v1_families renders: the v2 family whose series with the
// given resource and unit labels a v1 family's series equals, less
// `resource`, `unit` and a pod's `uid`, with labels renamed (v1's `hpa` is
// v2's `horizontalpodautoscaler`). kube_node_status_phase has no v2
// counterpart.
var v1Mapping = map[string]struct {
	v2, resource, unit string
	rename             map[string]string
}{
	"kube_pod_container_resource_requests_cpu_cores":    {"kube_pod_container_resource_requests", "cpu", "core", nil},
	"kube_pod_container_resource_requests_memory_bytes": {"kube_pod_container_resource_requests", "memory", "byte", nil},
	"kube_pod_container_resource_limits_cpu_cores":      {"kube_pod_container_resource_limits", "cpu", "core", nil},
	"kube_pod_container_resource_limits_memory_bytes":   {"kube_pod_container_resource_limits", "memory", "byte", nil},
	"kube_node_status_capacity_cpu_cores":               {"kube_node_status_capacity", "cpu", "core", nil},
	"kube_node_status_capacity_memory_bytes":            {"kube_node_status_capacity", "memory", "byte", nil},
	"kube_node_status_capacity_pods":                    {"kube_node_status_capacity", "pods", "integer", nil},
	"kube_node_status_allocatable_cpu_cores":            {"kube_node_status_allocatable", "cpu", "core", nil},
	"kube_node_status_allocatable_memory_bytes":         {"kube_node_status_allocatable", "memory", "byte", nil},
	"kube_node_status_allocatable_pods":                 {"kube_node_status_allocatable", "pods", "integer", nil},
	"kube_daemonset_updated_number_scheduled":           {"kube_daemonset_status_updated_number_scheduled", "", "", nil},
	"kube_hpa_metadata_generation":                      {"kube_horizontalpodautoscaler_metadata_generation", "", "", hpaRename},
	"kube_hpa_spec_max_replicas":                        {"kube_horizontalpodautoscaler_spec_max_replicas", "", "", hpaRename},
	"kube_hpa_spec_min_replicas":                        {"kube_horizontalpodautoscaler_spec_min_replicas", "", "", hpaRename},
	"kube_hpa_status_current_replicas":                  {"kube_horizontalpodautoscaler_status_current_replicas", "", "", hpaRename},
	"kube_hpa_status_desired_replicas":                  {"kube_horizontalpodautoscaler_status_desired_replicas", "", "", hpaRename},
	"kube_hpa_status_condition":                         {"kube_horizontalpodautoscaler_status_condition", "", "", hpaRename},
	"kube_hpa_labels":                                   {"kube_horizontalpodautoscaler_labels", "", "", hpaRename},
}

var hpaRename = map[string]string{"horizontalpodautoscaler": "hpa"}

// noV2 are the v1 families with no v2 counterpart: kube_node_status_phase
// (v2 dropped it) and the endpoint address counts (v2 has a series per
// address instead).
var noV2 = []string{"kube_node_status_phase", "kube_endpoint_address_available", "kube_endpoint_address_not_ready"}

// nodePhase reads the node's deprecated status.phase.
const nodePhase = "kube_node_status_phase"

// With legacy_v1_families: ["*"], the agent's v2 series still equal
// kube-state-metrics v2.20's on the same API server, and every v1 series
// equals the v2.20 series it maps to (v1Mapping); kube_node_status_phase,
// which v2 dropped, follows the node's status.phase. This covers the
// kube_hpa_* families, which kube-state-metrics v1.9.8 itself can no longer
// list (TestLegacyV1FamiliesMatchKubeStateMetricsV1 compares the others).
func TestLegacyV1FamiliesMatchKubeStateMetricsV2(t *testing.T) {
	needEnv(t)
	needBinary(t, "kube-state-metrics")
	require.ElementsMatch(t, watch.LegacyV1Families(), append(mapKeysOf(v1Mapping), noV2...), "every v1 family has its mapping")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "legacyv1"
	sc := legacyV1Fixtures(t, ctx, client, ns)

	ksm, err := testenv.StartKubeStateMetrics(ctx, t.TempDir(), env.cp.Kubeconfig, "--resources=pods,nodes,daemonsets,horizontalpodautoscalers", "--namespaces="+ns,
		"--metric-labels-allowlist=horizontalpodautoscalers=[*]") // kube_hpa_labels has every label

	require.NoError(t, err)
	defer ksm.Stop()
	got := legacyV1Snapshot(t, ctx, ns, []string{"pods", "nodes", "daemonsets", "horizontalpodautoscalers"},
		map[string]any{"metric_labels_allowlist": map[string][]string{"horizontalpodautoscalers": {"*"}}})
	text, err := ksm.Scrape(ctx)
	require.NoError(t, err)
	want, err := testenv.ParseExposition(text)
	require.NoError(t, err)
	// Split the agent's series into v1 and v2.
	gotV1, gotV2, gotPhase := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for k, v := range got {
		name := k[:strings.IndexByte(k, '{')]
		if name == nodePhase {
			gotPhase[k] = v
		} else if _, ok := v1Mapping[name]; ok {
			gotV1[k] = v
		} else {
			gotV2[k] = v
		}
	}
	missing, extra, differ := diffSeries(want, gotV2)
	require.Empty(t, missing, "v2 series only in kube-state-metrics")
	require.Empty(t, extra, "v2 series only in kube-state-push")
	require.Empty(t, differ, "v2 values differ")

	// The v1 series kube-state-metrics' v2 series map to.
	wantV1 := map[string]float64{}
	for k, v := range want {
		name, ls := parseSeriesKey(t, k)
		for v1Name, m := range v1Mapping {
			if name != m.v2 || labelValue(ls, "resource") != m.resource || labelValue(ls, "unit") != m.unit {
				continue
			}
			v1ls := slices.DeleteFunc(slices.Clone(ls), func(l testenv.Label) bool {
				return l.Name == "resource" || l.Name == "unit" || l.Name == "uid"
			})
			for i := range v1ls {
				if r, ok := m.rename[v1ls[i].Name]; ok {
					v1ls[i].Name = r
				}
			}
			wantV1[testenv.FormatSeries(v1Name, v1ls)] = v
		}
	}
	missing, extra, differ = diffSeries(wantV1, gotV1)
	var lines []string
	for _, k := range missing {
		lines = append(lines, fmt.Sprintf("only in the v2 mapping: %s %g", k, wantV1[k]))
	}
	for _, k := range extra {
		lines = append(lines, fmt.Sprintf("only in kube-state-push: %s %g", k, gotV1[k]))
	}
	for _, k := range differ {
		lines = append(lines, fmt.Sprintf("values differ: %s v2=%g v1=%g", k, wantV1[k], gotV1[k]))
	}
	require.Empty(t, lines, "v1 series differ from kube-state-metrics v2.20's through the v1 to v2 mapping")

	// Every v1 family has series.
	perFamily := map[string]int{}
	for k := range gotV1 {
		perFamily[k[:strings.IndexByte(k, '{')]]++
	}
	for name := range v1Mapping {
		require.NotZero(t, perFamily[name], "no series of %s", name)
	}
	require.Equal(t, map[string]float64{
		`kube_node_status_phase{node="` + sc.Nodes[0] + `",phase="Pending"}`:    0,
		`kube_node_status_phase{node="` + sc.Nodes[0] + `",phase="Running"}`:    1,
		`kube_node_status_phase{node="` + sc.Nodes[0] + `",phase="Terminated"}`: 0,
	}, gotPhase, "kube_node_status_phase only for the node whose status.phase is set")
	t.Logf("%d v2 series equal kube-state-metrics'; %d v1 series equal their v2 counterparts: %v", len(gotV2), len(gotV1), perFamily)
	for _, k := range []string{
		`kube_pod_container_resource_requests_cpu_cores{container="milli",namespace="legacyv1",node="` + sc.Nodes[1] + `",pod="odd-quantities"}`,
		`kube_pod_container_resource_requests_memory_bytes{container="milli",namespace="legacyv1",node="` + sc.Nodes[1] + `",pod="odd-quantities"}`,
		`kube_pod_container_resource_limits_memory_bytes{container="milli",namespace="legacyv1",node="` + sc.Nodes[1] + `",pod="odd-quantities"}`,
		`kube_node_status_allocatable_cpu_cores{node="` + sc.Nodes[0] + `"}`,
	} {
		require.Contains(t, gotV1, k)
	}
	require.Equal(t, 0.001, gotV1[`kube_pod_container_resource_requests_cpu_cores{container="milli",namespace="legacyv1",node="`+sc.Nodes[1]+`",pod="odd-quantities"}`])
	require.Equal(t, 2.0, gotV1[`kube_pod_container_resource_requests_memory_bytes{container="milli",namespace="legacyv1",node="`+sc.Nodes[1]+`",pod="odd-quantities"}`])
	require.Equal(t, 3.8, gotV1[`kube_node_status_allocatable_cpu_cores{node="`+sc.Nodes[0]+`"}`])
	for k := range gotV1 {
		require.NotContains(t, k, `container="init"`)
		require.NotContains(t, k, `container="none"`)
		require.NotContains(t, k, "uid=")
	}
}

// legacyV1Fixtures creates, in namespace ns, the sample cluster (two nodes,
// the first with the deprecated status.phase set; pods in every state, with
// requests and limits), the workload and batch fixtures (daemon sets,
// autoscalers) and a pod of odd quantities.
func legacyV1Fixtures(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) *testenv.SampleCluster {
	t.Helper()
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, ns)
	require.NoError(t, err)
	t.Cleanup(func() { cleanupNodes(t, client, sc.Nodes) })
	require.NoError(t, testenv.FixturesWorkloads(ctx, client, ns))
	require.NoError(t, testenv.FixturesBatch(ctx, client, ns))   // the autoscalers
	require.NoError(t, testenv.FixturesNetwork(ctx, client, ns)) // the endpoints
	// The deprecated status.phase, which only kube_node_status_phase reads.
	node, err := client.CoreV1().Nodes().Get(ctx, sc.Nodes[0], metav1.GetOptions{})
	require.NoError(t, err)
	node.Status.Phase = v1.NodeRunning
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
	// Quantities whose rounding differs between units: milli-cores,
	// fractional bytes (rounded up), binary and decimal suffixes; an init
	// container and an extended resource, which have no v1 series.
	q := resource.MustParse
	odd := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "odd-quantities", Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:       sc.Nodes[1],
			InitContainers: []v1.Container{{Name: "init", Image: "busybox:1.36", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")}}}},
			Containers: []v1.Container{
				{Name: "milli", Image: "busybox:1.36", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: q("1m"), v1.ResourceMemory: q("1500m")},
					Limits:   v1.ResourceList{v1.ResourceCPU: q("1500m"), v1.ResourceMemory: q("1.5Gi")},
				}},
				{Name: "decimal", Image: "busybox:1.36", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("100M"), "example.com/widget": q("3")},
					Limits:   v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("100M"), "example.com/widget": q("3")},
				}},
				{Name: "cpu-only", Image: "busybox:1.36", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: q("333m")}}},
				{Name: "none", Image: "busybox:1.36"},
			},
		},
	}
	_, err = client.CoreV1().Pods(ns).Create(ctx, odd, metav1.CreateOptions{})
	require.NoError(t, err)

	return sc
}

// legacyV1Snapshot runs the agent on resources in ns with every v1 family
// on, and returns a complete snapshot of its series. extra is more
// top-level configuration.
func legacyV1Snapshot(t *testing.T, ctx context.Context, ns string, resources []string, extra map[string]any) map[string]float64 {
	t.Helper()
	capture := testenv.NewCapture()
	defer capture.Close()
	cfg := captureConfig(capture.URL()).set("legacy_v1_families", []string{"*"})
	cfg.Resources, cfg.Namespaces = resources, []string{ns}
	for k, v := range extra {
		cfg.set(k, v)
	}
	o := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	defer func() { require.NoError(t, o.stop()) }()
	o.waitReady(t)
	return completeSnapshot(t, capture)
}

// parseSeriesKey splits a series key (testenv.FormatSeries) into its name
// and labels.
func parseSeriesKey(t *testing.T, k string) (string, []testenv.Label) {
	t.Helper()
	name, rest, ok := strings.Cut(k, "{")
	require.True(t, ok, k)
	rest = strings.TrimSuffix(rest, "}")
	var ls []testenv.Label
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		require.Positive(t, eq, k)
		ln := rest[:eq]
		quoted, err := strconv.QuotedPrefix(rest[eq+1:])
		require.NoError(t, err, k)
		v, err := strconv.Unquote(quoted)
		require.NoError(t, err, k)
		ls = append(ls, testenv.Label{Name: ln, Value: v})
		rest = strings.TrimPrefix(rest[eq+1+len(quoted):], ",")
	}
	return name, ls
}

func labelValue(ls []testenv.Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// ksmV1Binary is kube-state-metrics v1.9.8, which scripts/build-tools.sh
// builds from the module proxy through the tools/ksm1 module.
const ksmV1Binary = "kube-state-metrics-v1.9.8"

// The v1 families the agent renders equal kube-state-metrics v1.9.8's own,
// series for series, HELP and TYPE included, on the same API server, for
// the collectors v1.9.8 can still list there: pods, nodes, daemon sets and
// endpoints.
// (Its autoscaler collector lists autoscaling/v2beta1, removed in v1.25:
// the kube_hpa_* families are checked through the v2 mapping above.)
func TestLegacyV1FamiliesMatchKubeStateMetricsV1(t *testing.T) {
	needEnv(t)
	bin := needBinary(t, ksmV1Binary)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "legacyv1-ksm198"
	sc := legacyV1Fixtures(t, ctx, client, ns)

	port, err := testenv.FreePort()
	require.NoError(t, err)
	tport, err := testenv.FreePort()
	require.NoError(t, err)
	proc, err := testenv.Start(t.TempDir(), "kube-state-metrics-v1.9.8", bin,
		"--kubeconfig="+env.cp.Kubeconfig, "--host=127.0.0.1", "--port="+strconv.Itoa(port),
		"--telemetry-host=127.0.0.1", "--telemetry-port="+strconv.Itoa(tport),
		"--collectors=pods,nodes,daemonsets,endpoints", "--namespace="+ns)
	require.NoError(t, err)
	defer proc.Stop(5 * time.Second)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics"
	var text string
	// v1.9.8 serves before its reflectors have listed: wait for the last
	// objects created.
	eventually(t, time.Minute, "kube-state-metrics v1.9.8 has listed", func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		text = string(b)
		for _, s := range []string{`pod="odd-quantities"`, "kube_daemonset_updated_number_scheduled{", "kube_endpoint_address_available{", `kube_node_status_phase{node="` + sc.Nodes[0] + `"`} {
			if !strings.Contains(text, s) {
				return fmt.Errorf("no %s yet (log: %s)", s, proc.Tail())
			}
		}
		return nil
	})
	all, err := testenv.ParseExposition(text)
	require.NoError(t, err)
	got := legacyV1Snapshot(t, ctx, ns, []string{"pods", "nodes", "daemonsets", "endpoints"}, nil)

	// The families compared: the v1 families of these collectors.
	compared := map[string]bool{}
	for _, n := range watch.LegacyV1Families() {
		if !strings.HasPrefix(n, "kube_hpa_") {
			compared[n] = true
		}
	}
	pick := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if compared[k[:strings.IndexByte(k, '{')]] {
				out[k] = v
			}
		}
		return out
	}
	want, gotV1 := pick(all), pick(got)
	missing, extra, differ := diffSeries(want, gotV1)
	var lines []string
	for _, k := range missing {
		lines = append(lines, fmt.Sprintf("only in kube-state-metrics v1.9.8: %s %g", k, want[k]))
	}
	for _, k := range extra {
		lines = append(lines, fmt.Sprintf("only in kube-state-push: %s %g", k, gotV1[k]))
	}
	for _, k := range differ {
		lines = append(lines, fmt.Sprintf("values differ: %s v1.9.8=%g ours=%g", k, want[k], gotV1[k]))
	}
	require.Empty(t, lines, "v1 series differ from kube-state-metrics v1.9.8's")
	perFamily := map[string]int{}
	for k := range want {
		perFamily[k[:strings.IndexByte(k, '{')]]++
	}
	for n := range compared {
		require.NotZero(t, perFamily[n], "v1.9.8 rendered no series of %s", n)
	}

	// HELP and TYPE as v1.9.8 prints them.
	meta := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && compared[f[2]] {
			meta[f[1]+" "+f[2]] = strings.TrimPrefix(line, "# "+f[1]+" "+f[2]+" ")
		}
	}
	for _, r := range watch.All() {
		for _, f := range r.Families(watch.FamilyOptions{LegacyV1: []string{"*"}}) {
			if !compared[f.Name] {
				continue
			}
			require.Equal(t, meta["HELP "+f.Name], f.Help, "HELP of %s", f.Name)
			require.Equal(t, meta["TYPE "+f.Name], f.Type.String(), "TYPE of %s", f.Name)
			require.Equal(t, watch.Alpha, f.Stability, "%s: v1 had no stability levels, so no [STABLE] prefix", f.Name)
		}
	}
	t.Logf("%d v1 series of %d families equal kube-state-metrics v1.9.8's: %v", len(want), len(compared), perFamily)
}
