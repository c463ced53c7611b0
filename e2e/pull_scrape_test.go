package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// A real Prometheus scraping the agent's pull endpoint, as it would scrape
// kube-state-metrics, answers the dashboard queries; a deleted pod leaves
// its scrape at once. The agent pushes to another receiver at the same
// time.
func TestPullScrapedByPrometheus(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "pullscrape"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "pullscrape")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)
	nodeA, nodeB := sc.Nodes[0], sc.Nodes[1]

	capture := testenv.NewCapture()
	defer capture.Close()
	cfg := newConfig(capture.URL()).set("pull", map[string]string{"listen_address": "127.0.0.1:0"})
	cfg.Resources = []string{"nodes", "pods"}
	o := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	defer func() { require.NoError(t, o.stop()) }()
	o.waitReady(t)

	prom, err := testenv.StartPrometheusWithConfig(ctx, t.TempDir(), fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: [%q]
`, o.agent.PullAddr().String()))
	require.NoError(t, err)
	defer prom.Stop()

	expect := func(q, by string, want map[string]float64) {
		t.Helper()
		eventually(t, 30*time.Second, q, func() error {
			res, err := prom.Query(ctx, q)
			if err != nil {
				return err
			}
			got := map[string]float64{}
			for _, s := range res {
				got[s.Metric[by]] = s.Value
			}
			if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
				return fmt.Errorf("got %v, want %v", sorted(got), sorted(want))
			}
			return nil
		})
	}
	sel := fmt.Sprintf(`job="kube-state-metrics",namespace=%q`, ns)
	expect(`up{job="kube-state-metrics"}`, "job", map[string]float64{"kube-state-metrics": 1})
	expect(fmt.Sprintf(`sum(kube_pod_container_resource_requests{%s,resource="cpu"}) by (node)`, sel), "node",
		map[string]float64{nodeA: 0.6, nodeB: 0.9, "": 0.3})
	expect(fmt.Sprintf(`sum(kube_pod_status_phase{%s,phase="Running"})`, sel), "", map[string]float64{"": 4})
	expect(fmt.Sprintf(`kube_pod_container_status_restarts_total{%s,container="app"} > 0`, sel), "pod", map[string]float64{"crashloop": 5, "oomkilled": 2})
	expect(`kube_node_status_capacity{job="kube-state-metrics",resource="cpu",unit="core",node=~"pullscrape-.*"}`, "node", map[string]float64{nodeA: 4, nodeB: 4})
	expect(`kube_node_status_allocatable{job="kube-state-metrics",resource="pods",node=~"pullscrape-.*"}`, "node", map[string]float64{nodeA: 110, nodeB: 110})
	expect(fmt.Sprintf(`count(kube_pod_info{%s})`, sel), "", map[string]float64{"": 6})
	// The scrape's metadata is kube-state-metrics': HELP with the
	// stability prefix and the type.
	md, err := testenv.ScrapeWith(ctx, prom.URL+"/api/v1/metadata?metric=kube_pod_info", nil)
	require.NoError(t, err)
	require.Contains(t, md.Body, `"type":"gauge","unit":"","help":"[STABLE] Information about pod."`)

	zero := int64(0)
	require.NoError(t, client.CoreV1().Pods(ns).Delete(ctx, "crashloop", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	expect(fmt.Sprintf(`count(kube_pod_info{%s})`, sel), "", map[string]float64{"": 5})
	// Meanwhile the same series are pushed too.
	require.NotEmpty(t, completeSnapshot(t, capture))
}
