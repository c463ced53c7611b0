package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
	"github.com/kube-state-push/kube-state-push/watch"
)

// intentionalDifference is a series kube-state-metrics and the agent are
// allowed to disagree on.
type intentionalDifference struct {
	// series matches the series' key (testenv.FormatSeries), on either side.
	series *regexp.Regexp
	// why is the reason.
	why string
}

// lastAppliedWhy is why the agent never exports a Secret's
// kubectl.kubernetes.io/last-applied-configuration annotation.
const lastAppliedWhy = "kubectl.kubernetes.io/last-applied-configuration on a Secret holds its data in clear " +
	"(kubectl apply stores the whole applied Secret there): the agent drops it when decoding the Secret and never " +
	"exports it, whatever metric_annotations_allowlist says"

// intentionalDifferences are the series kube-state-metrics and the agent
// are allowed to disagree on, each with its reason. The comparison of every
// resource with every allowlist fails if one of them no longer differs, so
// the list cannot rot.
var intentionalDifferences = []intentionalDifference{
	// kube-state-metrics' series, with the annotation as a label...
	{regexp.MustCompile(`^kube_secret_annotations\{annotation_kubectl_kubernetes_io_last_applied_configuration=".+",namespace="[^"]+",secret="secret-applied"\}$`), lastAppliedWhy},
	// ... and the agent's, without.
	{regexp.MustCompile(`^kube_secret_annotations\{namespace="[^"]+",secret="secret-applied"\}$`), lastAppliedWhy},
}

// differencesSeen records, by index in intentionalDifferences, which ones
// compareWithKubeStateMetrics met; mu guards it.
var differencesSeen struct {
	mu   sync.Mutex
	seen map[int]bool
}

// intentional returns the index of the intentional difference k is, or -1.
func intentional(k string) int {
	for i, d := range intentionalDifferences {
		if d.series.MatchString(k) {
			return i
		}
	}
	return -1
}

// The agent's series equal kube-state-metrics' own, on the same API server,
// for every resource with every allowlist turned on.
func TestCompatibilityWithKubeStateMetrics(t *testing.T) {
	needEnv(t)
	needBinary(t, "kube-state-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "compat"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "compat")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)
	for name, f := range map[string]func(context.Context, kubernetes.Interface, string) error{
		"workloads": testenv.FixturesWorkloads,
		"batch":     testenv.FixturesBatch,
		"storage":   testenv.FixturesStorage,
		"network":   testenv.FixturesNetwork,
		"config":    testenv.FixturesConfig,
		"admission": testenv.FixturesAdmission,
		"secrets":   testenv.FixturesSecrets,
		"pods":      testenv.FixturesPods,
	} {
		require.NoError(t, f(ctx, client, ns), "fixtures %s", name)
	}

	resources := strings.Join(watch.Names(), ",")
	optIn := "kube_pod_nodeselectors,kube_persistentvolume_csi_attributes"
	t.Run("every resource and allowlist", func(t *testing.T) {
		differencesSeen.mu.Lock()
		differencesSeen.seen = map[int]bool{}
		differencesSeen.mu.Unlock()
		want, _ := compareWithKubeStateMetrics(t, ctx, []string{
			"--resources=" + resources,
			"--namespaces=" + ns,
			"--metric-labels-allowlist=*=[*]",
			"--metric-annotations-allowlist=*=[*]",
			"--metric-opt-in-list=" + optIn,
		}, func(c *agentConfig) {
			c.Resources, c.Namespaces = strings.Split(resources, ","), []string{ns}
			c.set("metric_labels_allowlist", map[string][]string{"*": {"*"}})
			c.set("metric_annotations_allowlist", map[string][]string{"*": {"*"}})
			c.set("metric_opt_in_list", strings.Split(optIn, ","))
		})
		requireFamilyCoverage(t, want)
		requireDocumentedLabels(t, want)
		differencesSeen.mu.Lock()
		defer differencesSeen.mu.Unlock()
		for i, d := range intentionalDifferences {
			require.True(t, differencesSeen.seen[i], "intentional difference %s (%s) no longer differs: remove it from the list", d.series, d.why)
		}
	})
	t.Run("filters", func(t *testing.T) {
		want, _ := compareWithKubeStateMetrics(t, ctx, []string{
			"--resources=pods,nodes,namespaces,configmaps,secrets,deployments",
			"--namespaces-denylist=kube-system,default,kube-public,kube-node-lease",
			"--metric-denylist=kube_pod_container_.*,.*_created$",
			"--metric-labels-allowlist=pods=[app],namespaces=[*]",
			"--metric-annotations-allowlist=secrets=[note*]",
		}, func(c *agentConfig) {
			c.Resources = []string{"pods", "nodes", "namespaces", "configmaps", "secrets", "deployments"}
			c.set("namespaces_denylist", []string{"kube-system", "default", "kube-public", "kube-node-lease"})
			c.set("metric_denylist", []string{"kube_pod_container_.*", ".*_created$"})
			c.set("metric_labels_allowlist", map[string][]string{"pods": {"app"}, "namespaces": {"*"}})
			c.set("metric_annotations_allowlist", map[string][]string{"secrets": {"note*"}})
		})
		require.NotEmpty(t, want)
		for k := range want {
			require.False(t, strings.HasPrefix(k, "kube_pod_container_"), k)
			require.False(t, strings.Contains(k, `namespace="kube-system"`) && !strings.HasPrefix(k, "kube_namespace_"), k)
		}
	})
	t.Run("allowlist", func(t *testing.T) {
		want, _ := compareWithKubeStateMetrics(t, ctx, []string{
			"--resources=pods,jobs,cronjobs",
			"--namespaces=" + ns,
			"--metric-allowlist=^kube_pod_(info|status_phase)$,kube_job_.*",
		}, func(c *agentConfig) {
			c.Resources, c.Namespaces = []string{"pods", "jobs", "cronjobs"}, []string{ns}
			c.set("metric_allowlist", []string{"^kube_pod_(info|status_phase)$", "kube_job_.*"})
		})
		for k := range want {
			require.Regexp(t, `^kube_(pod_info|pod_status_phase|job_.*)\{`, k)
		}
	})
}

// compareWithKubeStateMetrics runs kube-state-metrics with flags and the
// agent with the equivalent configuration (settings) against the shared
// API server, and requires the same series from both, but for the
// intentional differences. It returns both sides.
func compareWithKubeStateMetrics(t *testing.T, ctx context.Context, flags []string, settings func(*agentConfig)) (want, got map[string]float64) {
	t.Helper()
	ksm, err := testenv.StartKubeStateMetrics(ctx, t.TempDir(), env.cp.Kubeconfig, flags...)
	require.NoError(t, err)
	defer ksm.Stop()

	capture := testenv.NewCapture()
	defer capture.Close()
	// Its pull page is compared with kube-state-metrics' too.
	cfg := captureConfig(capture.URL()).set("pull", map[string]string{"listen_address": "127.0.0.1:0"})
	settings(cfg)
	o := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	defer func() { require.NoError(t, o.stop()) }()
	a := o.agent

	// Both have listed everything once ready; then take kube-state-metrics'
	// scrape and the agent's next complete snapshot.
	o.waitReady(t)
	text, err := ksm.Scrape(ctx)
	require.NoError(t, err)
	want, err = testenv.ParseExposition(text)
	require.NoError(t, err)
	got = completeSnapshot(t, capture)

	missing, extra, differ := diffSeries(want, got)
	var unexpected []string
	report := func(kind string, keys []string, detail func(string) string) {
		for _, k := range keys {
			if i := intentional(k); i >= 0 {
				differencesSeen.mu.Lock()
				if differencesSeen.seen != nil {
					differencesSeen.seen[i] = true
				}
				differencesSeen.mu.Unlock()
				continue
			}
			unexpected = append(unexpected, kind+" "+k+detail(k))
		}
	}
	report("only in kube-state-metrics:", missing, func(k string) string { return fmt.Sprintf(" %g", want[k]) })
	report("only in kube-state-push:", extra, func(k string) string { return fmt.Sprintf(" %g", got[k]) })
	report("values differ:", differ, func(k string) string { return fmt.Sprintf(" ksm=%g ours=%g", want[k], got[k]) })
	t.Logf("compared %d series from kube-state-metrics with %d from the agent: %d unexplained differences",
		len(want), len(got), len(unexpected))
	if len(unexpected) > 0 {
		if len(unexpected) > 200 {
			unexpected = append(unexpected[:200], fmt.Sprintf("... and %d more", len(unexpected)-200))
		}
		t.Fatalf("series differ from kube-state-metrics:\n%s", strings.Join(unexpected, "\n"))
	}
	requireSameExposition(t, ctx, ksm.URL, "http://"+a.PullAddr().String())
	return want, got
}

// completeSnapshot returns the live series of a snapshot capture received
// whole: the last but one of at least three (the last may still be
// arriving), staleness markers left out.
func completeSnapshot(t *testing.T, capture *testenv.Capture) map[string]float64 {
	t.Helper()
	var got map[string]float64
	eventually(t, 30*time.Second, "a complete snapshot after ready", func() error {
		ts := capture.Timestamps()
		if len(ts) < 3 {
			return fmt.Errorf("%d snapshots so far", len(ts))
		}
		got = withoutStale(capture.Series(ts[len(ts)-2]))
		return nil
	})
	return got
}

// diffSeries compares two series maps.
func diffSeries(want, got map[string]float64) (missing, extra, differ []string) {
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !(v == g || math.IsNaN(v) && math.IsNaN(g)):
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(differ)
	return missing, extra, differ
}

// requireFamilyCoverage checks that the fixtures exercise every family, so
// that "no differences" covers all of them.
func requireFamilyCoverage(t *testing.T, series map[string]float64) {
	t.Helper()
	covered := map[string]int{}
	for k := range series {
		covered[k[:strings.IndexByte(k, '{')]]++
	}
	var none []string
	total := 0
	for _, r := range watch.All() {
		for _, f := range r.Families(watch.FamilyOptions{}) {
			total++
			if covered[f.Name] == 0 {
				none = append(none, f.Name)
			}
		}
	}
	t.Logf("families with series: %d of %d", total-len(none), total)
	require.Empty(t, none, "families no fixture exercises")
}

// dynamicLabel matches label names made from Kubernetes keys, documented
// with a wildcard.
var dynamicLabel = regexp.MustCompile(`^(label|annotation|nodeselector|metadata)_.*$`)

// requireDocumentedLabels checks docs/labels.json, the label names of each
// family that docs/metrics.md lists, against kube-state-metrics' own
// series. With KSP_UPDATE_LABELS=1 it writes the file instead; then run
// go run ./internal/docgen.
func requireDocumentedLabels(t *testing.T, series map[string]float64) {
	t.Helper()
	got := map[string][]string{}
	for k := range series {
		name, labels, _ := strings.Cut(k, "{")
		seen := map[string]bool{}
		for _, l := range got[name] {
			seen[l] = true
		}
		for _, kv := range splitLabels(strings.TrimSuffix(labels, "}")) {
			l := dynamicLabel.ReplaceAllString(kv, "${1}_*")
			if !seen[l] {
				seen[l] = true
				got[name] = append(got[name], l)
			}
		}
		if _, ok := got[name]; !ok {
			got[name] = []string{}
		}
	}
	for _, ls := range got {
		sort.Strings(ls)
	}
	path := filepath.Join("..", "docs", "labels.json")
	if os.Getenv("KSP_UPDATE_LABELS") == "1" {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		return
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var want map[string][]string
	require.NoError(t, json.Unmarshal(b, &want))
	require.Equal(t, want, got, "docs/labels.json is stale: run KSP_UPDATE_LABELS=1 go test ./e2e -run Compat, then go run ./internal/docgen")
}

// splitLabels returns the label names of `a="x",b="y"`.
func splitLabels(s string) []string {
	var names []string
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		names = append(names, strings.TrimLeft(s[:eq], ","))
		// Skip the quoted value.
		i := eq + 2
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		s = s[min(i+1, len(s)):]
	}
	return names
}
