package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// With resources: [] and a custom_resource_state document, the agent
// watches no built-in resource: VictoriaMetrics receives the custom
// resource series, equal to those of kube-state-metrics run with
// --custom-resource-state-only on the same document, and the agent's own
// series (job="kube-state-push"), nothing else.
func TestCustomResourceStateOnly(t *testing.T) {
	needEnv(t)
	needBinary(t, "kube-state-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(env.cp.RESTConfig())
	require.NoError(t, err)
	ns := "crs-only"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer deleteNamespace(t, client, ns)
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
	vm := startVM(t)

	// The agent's own series stay on (the default), to show which they are.
	conf := newConfig(vm.WriteURL()).set("custom_resource_state", doc)
	conf.NoResources = true
	o := startAgent(t, agentOptions{ctx: ctx, config: conf})
	defer func() { require.NoError(t, o.stop()) }()

	families := crsFamilies(t, crsDocument)
	var want, got map[string]float64
	var self int
	eventually(t, time.Minute, "VictoriaMetrics holds kube-state-metrics' series", func() error {
		if !o.agent.Ready() {
			return fmt.Errorf("agent not ready")
		}
		text, err := ksm.Scrape(ctx)
		if err != nil {
			return err
		}
		if want, err = testenv.ParseExposition(text); err != nil {
			return err
		}
		// kube-state-metrics looks for CRDs every 3 s: wait until every
		// family has series.
		covered := map[string]bool{}
		for k := range want {
			covered[k[:strings.IndexByte(k, '{')]] = true
		}
		if len(covered) < len(families) {
			return fmt.Errorf("kube-state-metrics has series of %d of %d families", len(covered), len(families))
		}
		series, err := vm.Export(ctx, `{__name__=~".+"}`)
		if err != nil {
			return err
		}
		got, self = map[string]float64{}, 0
		for _, s := range series {
			if s.Metric["job"] == "kube-state-push" {
				self++
				continue
			}
			v := s.Values[len(s.Values)-1]
			if math.IsNaN(v) {
				continue // ended: no longer pushed
			}
			got[exportKey(s.Metric)] = v
		}
		missing, extra, differ := diffSeries(want, got)
		if n := len(missing) + len(extra) + len(differ); n > 0 {
			return fmt.Errorf("%d differences:\nonly in kube-state-metrics: %s\nonly in kube-state-push: %s\nvalues differ: %s",
				n, strings.Join(missing, "\n  "), strings.Join(extra, "\n  "), strings.Join(differ, "\n  "))
		}
		return nil
	})
	require.NotEmpty(t, want)
	require.Positive(t, self, "the agent's own series arrive too")
	for k := range got {
		_, ok := families[k[:strings.IndexByte(k, '{')]]
		require.True(t, ok, "not a custom resource series: %s", k)
	}
	t.Logf("receiver: %d custom resource series, equal to kube-state-metrics' %d; %d of the agent's own; no other series", len(got), len(want), self)
}
