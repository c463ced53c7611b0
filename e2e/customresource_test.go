package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/customresource"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// crsIntentionalDifferences are the custom resource series kube-state-
// metrics and the agent may disagree on: none.
var crsIntentionalDifferences []string

// crsFamilies returns the names of the document's families.
func crsFamilies(t *testing.T, doc string) map[string]customresource.Config {
	t.Helper()
	cfg, err := config.Load([]byte("remote_write: [{url: http://127.0.0.1:1/}]\ncustom_resource_state:\n"+indent(doc, "  ")), "crs")
	require.NoError(t, err)
	out := map[string]customresource.Config{}
	for _, f := range cfg.CustomResourceState.Families() {
		out[f.Name] = *cfg.CustomResourceState
	}
	return out
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// onlyFamilies keeps the series of the named families.
func onlyFamilies(series map[string]float64, families map[string]customresource.Config) map[string]float64 {
	out := map[string]float64{}
	for k, v := range series {
		if _, ok := families[k[:strings.IndexByte(k, '{')]]; ok {
			out[k] = v
		}
	}
	return out
}

// The agent's custom resource series equal kube-state-metrics v2.20's own
// for the same CustomResourceStateMetrics document, on the real API
// server: five CRDs (namespaced, cluster-scoped, two versions through a
// version wildcard, two kinds through a kind wildcard) whose objects
// exercise every metric type and path feature; HELP and type too. No
// intentional differences.
func TestCustomResourceStateCompatibility(t *testing.T) {
	needEnv(t)
	needBinary(t, "kube-state-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(env.cp.RESTConfig())
	require.NoError(t, err)
	ns := "crs-compat"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	crsFixtures(t, ctx, dc, ns)
	defer func() {
		for _, n := range []string{"widgets.crs.example.com", "gadgets.crs.example.com", "gizmos.other.example.com", "parts.third.example.com", "bolts.third.example.com"} {
			deleteCRD(t, context.Background(), dc, n)
		}
	}()

	dir := t.TempDir()
	doc := filepath.Join(dir, "crs.yaml")
	require.NoError(t, os.WriteFile(doc, []byte(crsDocument), 0o600))
	ksm, err := testenv.StartKubeStateMetrics(ctx, t.TempDir(), env.cp.Kubeconfig,
		"--custom-resource-state-only", "--custom-resource-state-config-file="+doc)
	require.NoError(t, err)
	defer ksm.Stop()

	capture := testenv.NewCapture()
	defer capture.Close()
	conf := captureConfig(capture.URL()).set("pull", map[string]string{"listen_address": "127.0.0.1:0"}).set("custom_resource_state", doc)
	conf.Resources = []string{"namespaces"}
	o := startAgent(t, agentOptions{ctx: ctx, config: conf})
	defer func() { require.NoError(t, o.stop()) }()

	families := crsFamilies(t, crsDocument)
	var want, got map[string]float64
	var text string
	// kube-state-metrics looks for CRDs every 3 s (internal/discovery
	// Interval): compare until both hold every object, or give up.
	eventually(t, time.Minute, "the same custom resource series", func() error {
		if !o.agent.Ready() {
			return fmt.Errorf("agent not ready")
		}
		if text, err = ksm.Scrape(ctx); err != nil {
			return err
		}
		all, err := testenv.ParseExposition(text)
		if err != nil {
			return err
		}
		want = onlyFamilies(all, families)
		ts := capture.Timestamps()
		if len(ts) < 2 {
			return fmt.Errorf("%d snapshots", len(ts))
		}
		got = map[string]float64{}
		for k, v := range onlyFamilies(capture.Series(ts[len(ts)-2]), families) {
			if !encode.IsStaleNaN(v) {
				got[k] = v
			}
		}
		missing, extra, differ := diffSeries(want, got)
		if n := len(missing) + len(extra) + len(differ); n > 0 {
			return fmt.Errorf("%d differences:\nonly in kube-state-metrics: %s\nonly in kube-state-push: %s\nvalues differ: %s",
				n, strings.Join(missing, "\n  "), strings.Join(extra, "\n  "), strings.Join(differ, "\n  "))
		}
		return nil
	})
	require.Empty(t, crsIntentionalDifferences)
	t.Logf("compared %d custom resource series: 0 differences", len(want))
	if os.Getenv("KSP_CRS_DUMP") != "" {
		for k, v := range want {
			t.Logf("%s %g", k, v)
		}
	}

	// Every family has series, and kube-state-metrics' HELP and TYPE are
	// the agent's (TYPE info and stateset are printed as gauge in the
	// text format).
	covered := map[string]bool{}
	for k := range want {
		covered[k[:strings.IndexByte(k, '{')]] = true
	}
	var none []string
	for name := range families {
		if !covered[name] {
			none = append(none, name)
		}
	}
	sort.Strings(none)
	require.Empty(t, none, "families without series")
	cfg := families["gizmo_count"]
	types := map[string]string{}
	for _, f := range cfg.Families() {
		require.Contains(t, text, "# HELP "+f.Name+" "+f.Help+"\n")
		require.Contains(t, text, "# TYPE "+f.Name+" gauge\n")
		types[f.Name] = f.Type.String()
	}
	require.Equal(t, "stateset", types["kube_customresource_phase"])
	require.Equal(t, "info", types["kube_customresource_info"])
	require.Equal(t, "gauge", types["crs_gadget_sub_ready"])

	// The agent's pull page holds kube-state-metrics' lines exactly, label
	// order and HELP and TYPE included, in both formats.
	pullURL := o.pullURL()
	for _, accept := range []string{"", openMetricsAccept} {
		h := map[string]string{}
		if accept != "" {
			h["Accept"] = accept
		}
		ksmPage, err := testenv.ScrapeWith(ctx, ksm.URL+"/metrics", h)
		require.NoError(t, err)
		ours, err := testenv.ScrapeWith(ctx, pullURL+"?exclude_resources=namespaces", h)
		require.NoError(t, err)
		diff := exposedLineDiff(ksmPage.Body, ours.Body)
		require.Empty(t, diff, "pull page (Accept %q) differs from kube-state-metrics' /metrics", accept)
		t.Logf("pull page (Accept %q): %d lines, the same as kube-state-metrics'", accept, strings.Count(ours.Body, "\n"))
	}
}
