package e2e

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// hostAddress returns a global unicast IPv4 address of this machine that
// is not loopback, or "" if it has none.
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// TestKubeletThroughAPIServer runs a hollow kubelet on this machine's
// non-loopback address, which the API server's node proxy accepts, and the
// agent in apiserver mode: the kubelet's cAdvisor series reach Prometheus
// through /api/v1/nodes/<name>/proxy/metrics/cadvisor. The node is named
// by its address: the kubelet always reports its hostname as an address,
// which the API server prefers (--kubelet-preferred-address-types starts
// with Hostname), and an address as hostname needs no DNS.
func TestKubeletThroughAPIServer(t *testing.T) {
	needEnv(t)
	ip := hostAddress()
	if ip == "" {
		t.Skip("no non-loopback address: the node proxy refuses loopback kubelets")
	}
	bin, err := testenv.Binary("hollow-kubelet")
	if err != nil {
		t.Skip(err)
	}
	c, err := env.cp.Client()
	require.NoError(t, err)
	tl := writeKubeletTLS(t, t.TempDir())
	port, err := testenv.FreePort()
	require.NoError(t, err)
	p, err := testenv.Start(env.dir, "hollow-kubelet-proxy", bin,
		"--kubeconfig="+env.cp.Kubeconfig, "--name="+ip, "--kubelet-port="+strconv.Itoa(port),
		"--node-ip="+ip, "--tls-cert-file="+tl.certFile, "--tls-key-file="+tl.keyFile, "--v=1")
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	t.Cleanup(func() { cleanupNodes(t, c, []string{ip}) })
	eventually(t, 60*time.Second, "node "+ip+" registered", func() error {
		if p.Exited() {
			return fmt.Errorf("hollow kubelet exited: %w\n%s", p.Err(), p.Tail())
		}
		n, err := c.CoreV1().Nodes().Get(t.Context(), ip, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(port) || len(n.Status.Addresses) == 0 {
			return fmt.Errorf("port %d, addresses %v", n.Status.DaemonEndpoints.KubeletEndpoint.Port, n.Status.Addresses)
		}
		return nil
	})
	ns := "kubelet-e2e-proxy"
	createNamespace(t, c, ns)
	bindPods(t, c, ns, ip, map[string][]string{"api": {"server"}})

	cfg := pipelineConfig()
	cfg.Kubelet = newKubelet("apiserver", "")
	cfg.Kubelet.Extra = map[string]any{"paths": yamlValue(t, `
- path: /metrics/cadvisor
- path: /metrics/resource
- path: /metrics
  metric_allowlist: [^kubelet_]
`)}
	a := startAgent(t, agentOptions{config: cfg})
	sel := fmt.Sprintf(`node=%q,job="kubelet",metrics_path="/metrics/cadvisor",instance="%s:%d"`, ip, ip, port)
	expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{id="/",%s})`, sel), "", map[string]float64{"": 1})
	expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{container!="",namespace=%q,%s}) by (pod,container)`, ns, sel), "pod,container",
		map[string]float64{"api/server": 1})
	expectQuery(t, fmt.Sprintf(`up{%s}`, sel), "node", map[string]float64{ip: 1})
	// The other two paths, through the same proxy: every series of
	// /metrics matches the allowlist.
	all := fmt.Sprintf(`node=%q,job="kubelet"`, ip)
	expectQuery(t, fmt.Sprintf(`up{%s}`, all), "metrics_path", map[string]float64{"/metrics/cadvisor": 1, "/metrics/resource": 1, "/metrics": 1})
	expectQuery(t, fmt.Sprintf(`kubelet_node_name{%s,metrics_path="/metrics"}`, all), "node", map[string]float64{ip: 1})
	expectQuery(t, fmt.Sprintf(`count({%s,metrics_path="/metrics",__name__!~"kubelet_.*|up"})`, all), "", map[string]float64{})
	// /metrics/resource: the kubelet's summary provider over the
	// synthetic cAdvisor's root (pods come from the fake CRI, which
	// reports no stats).
	expectQuery(t, fmt.Sprintf(`resource_scrape_error{%s,metrics_path="/metrics/resource"}`, all), "node", map[string]float64{ip: 0})
	expectPositive(t, fmt.Sprintf(`node_memory_working_set_bytes{%s,metrics_path="/metrics/resource"}`, all), "node", []string{ip})
	expectPositive(t, fmt.Sprintf(`node_cpu_usage_seconds_total{%s,metrics_path="/metrics/resource"}`, all), "node", []string{ip})
	res, err := queryBy(t.Context(), fmt.Sprintf(`count({%s,metrics_path="/metrics/resource",__name__!="up"}) by (__name__)`, all), "__name__")
	require.NoError(t, err)
	t.Logf("/metrics/resource families from the hollow kubelet: %v", sorted(res))
	require.NoError(t, a.stop())
}
