package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestKubeletLabelsAsPrometheusScrapes compares what the agent pushes with
// what a real Prometheus stores when it scrapes the same hollow kubelet
// as kube-prometheus-stack's kubelet cAdvisor endpoint does (honor_labels,
// the Service's target labels, metrics_path from __metrics_path__, the
// node label the operator adds): the same label sets, for the node total
// and for every container.
func TestKubeletLabelsAsPrometheusScrapes(t *testing.T) {
	needEnv(t)
	c, err := env.cp.Client()
	require.NoError(t, err)
	dir := t.TempDir()
	tl := writeKubeletTLS(t, dir)
	node := "kubelet-e2e-labels"
	hk := startHollowKubelet(t, c, node, tl)
	t.Cleanup(func() { cleanupNodes(t, c, []string{node}) })
	ns := "kubelet-e2e-labels"
	createNamespace(t, c, ns)
	bindPods(t, c, ns, node, map[string][]string{"web": {"app", "sidecar"}})

	scraper, err := testenv.StartPrometheusWithConfig(t.Context(), dir, fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: kubelet
    honor_labels: true
    scheme: https
    tls_config: {ca_file: %s}
    metrics_path: /metrics/cadvisor
    static_configs:
      - targets: ["127.0.0.1:%d"]
        labels: {endpoint: https-metrics, namespace: kube-system, service: kube-prometheus-stack-kubelet, node: %s}
    relabel_configs:
      - source_labels: [__metrics_path__]
        target_label: metrics_path
`, tl.caFile, hk.port, node))
	require.NoError(t, err)
	defer scraper.Stop()

	cfg := pipelineConfig()
	cfg.Kubelet = newKubelet("", tl.caFile)
	cfg.Kubelet.BearerTokenFile = ptr.To("")
	a := startAgent(t, agentOptions{config: cfg})
	defer func() { require.NoError(t, a.stop()) }()

	q := fmt.Sprintf(`container_memory_working_set_bytes{node=%q,container!=""} or container_memory_working_set_bytes{node=%q,id="/"}`, node, node)
	// The root and 2 containers.
	got := requireSameLabelSets(t, 60*time.Second, q, env.prom, scraper, 3)
	t.Logf("label sets as Prometheus scrapes them and the agent pushes them:\n%s", strings.Join(got, "\n"))
}
