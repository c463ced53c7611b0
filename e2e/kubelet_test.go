package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// hollowKubelet is a running tools/kubelet program: k8s.io/kubernetes'
// hollow kubelet serving the kubelet's own handlers, with a synthetic
// cAdvisor for the pods bound to its node.
type hollowKubelet struct {
	node string
	port int
	proc *testenv.Process
}

// kubeletTLS is a CA made by the test and a serving certificate for
// 127.0.0.1 signed by it, so that the agent verifies the kubelets as it
// verifies real ones with the pod's CA.
type kubeletTLS struct{ caFile, certFile, keyFile string }

func writeKubeletTLS(t *testing.T, dir string) kubeletTLS {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hollow-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	out := kubeletTLS{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "kubelet.pem"), keyFile: filepath.Join(dir, "kubelet-key.pem")}
	require.NoError(t, os.WriteFile(out.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	require.NoError(t, os.WriteFile(out.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(out.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return out
}

// startHollowKubelet runs a hollow kubelet for node on a free loopback port
// and waits until its node is registered. The kubelet refuses to report a
// loopback InternalIP (validateNodeIP), so the test writes it into the
// node's status; the kubelet's own status updates leave it there.
func startHollowKubelet(t *testing.T, c kubernetes.Interface, node string, tl kubeletTLS) *hollowKubelet {
	t.Helper()
	bin := needBinary(t, "hollow-kubelet")
	port, err := testenv.FreePort()
	require.NoError(t, err)
	p, err := testenv.Start(env.dir, node, bin,
		"--kubeconfig="+env.cp.Kubeconfig, "--name="+node, "--kubelet-port="+strconv.Itoa(port),
		"--node-ip=127.0.0.1", "--tls-cert-file="+tl.certFile, "--tls-key-file="+tl.keyFile, "--v=1")
	require.NoError(t, err)
	hk := &hollowKubelet{node: node, port: port, proc: p}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	ctx := context.Background()
	eventually(t, 60*time.Second, "node "+node+" registered with its address", func() error {
		if p.Exited() {
			return fmt.Errorf("hollow kubelet exited: %w\n%s", p.Err(), p.Tail())
		}
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(port) {
			return fmt.Errorf("kubelet port %d, want %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port, port)
		}
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP && a.Address == "127.0.0.1" {
				return nil
			}
		}
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.1"})
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if err == nil {
			err = fmt.Errorf("address written, checking again")
		}
		return err
	})
	return hk
}

// get reads a path of the kubelet over HTTPS, verified with the test's CA.
func (hk *hollowKubelet) get(t *testing.T, tl kubeletTLS, path string) []byte {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(tl.caFile)
	require.NoError(t, err)
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d%s", hk.port, path))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	return body
}

// bindPods creates pods bound to node, each with the named containers.
func bindPods(t *testing.T, c kubernetes.Interface, ns, node string, pods map[string][]string) {
	t.Helper()
	no := false
	for name, containers := range pods {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       v1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no},
		}
		for _, ctr := range containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: ctr, Image: "registry.example/" + ctr + ":1"})
		}
		_, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// TestKubeletCadvisor runs two hollow kubelets with pods bound to them and
// the agent reading their /metrics/cadvisor directly over HTTPS; a real
// Prometheus answers dashboard 13105's node usage queries and a per-pod
// container query, and a node deleted mid-test goes stale at once.
func TestKubeletCadvisor(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	dir := t.TempDir()
	tl := writeKubeletTLS(t, dir)
	nodeA, nodeB := "kubelet-e2e-a", "kubelet-e2e-b"
	ka := startHollowKubelet(t, client, nodeA, tl)
	kb := startHollowKubelet(t, client, nodeB, tl)
	t.Cleanup(func() { cleanupNodes(t, client, []string{nodeA, nodeB}) })
	ns := "kubelet-e2e"
	createNamespace(t, client, ns)
	bindPods(t, client, ns, nodeA, map[string][]string{"web": {"app", "sidecar"}})
	bindPods(t, client, ns, nodeB, map[string][]string{"db": {"db"}})

	// Two more nodes whose "kubelets" refuse (403) or never answer: they
	// must delay neither the real ones nor the snapshot.
	refuse := tlsServer(t, tl, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Forbidden", http.StatusForbidden) }))
	defer refuse.Close()
	hang := make(chan struct{})
	slow := tlsServer(t, tl, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)
	nodeF, nodeS := "kubelet-e2e-forbidden", "kubelet-e2e-slow"
	fakeNode(t, client, nodeF, refuse.URL)
	fakeNode(t, client, nodeS, slow.URL)
	t.Cleanup(func() { cleanupNodes(t, client, []string{nodeF, nodeS}) })

	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("e2e-token\n"), 0o600))
	cfg := pipelineConfig()
	cfg.Kubelet = newKubelet("direct", tl.caFile)
	cfg.Kubelet.BearerTokenFile = &token
	a := startAgent(t, agentOptions{config: cfg})

	nodes := fmt.Sprintf(`node=~"%s|%s"`, nodeA, nodeB)
	both := func(v float64) map[string]float64 { return map[string]float64{nodeA: v, nodeB: v} }
	t.Run("node usage queries", func(t *testing.T) {
		// The dashboard's own queries: [2m] windows, which the test's
		// minute of samples does not fill, so rate() is below the half
		// core the synthetic root uses; a 20s window shows it.
		expectPositive(t, fmt.Sprintf(`sum(rate(container_cpu_usage_seconds_total{id="/",%s}[2m])) by (node)`, nodes), "node", []string{nodeA, nodeB})
		expectRounded(t, fmt.Sprintf(`sum(rate(container_cpu_usage_seconds_total{id="/",%s}[20s])) by (node)`, nodes), "node", 10, both(0.5))
		expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{id="/",%s}) by (node)`, nodes), "node", both(1))
		expectPositive(t, fmt.Sprintf(`sum(container_memory_working_set_bytes{id="/",%s}) by (node)`, nodes), "node", []string{nodeA, nodeB})
		expectPositive(t, fmt.Sprintf(`sum(container_fs_usage_bytes{device=~"^/dev/.*$",id="/",%s}) by (node)`, nodes), "node", []string{nodeA, nodeB})
		expectQuery(t, fmt.Sprintf(`sum(container_fs_limit_bytes{device=~"^/dev/.*$",id="/",%s}) by (node)`, nodes), "node", both(100<<30))
		// The fifth joins the cAdvisor series with kube_node_status_capacity
		// (4 cores) by node: divided by the first, it is 100/4.
		cpu := fmt.Sprintf(`sum(rate(container_cpu_usage_seconds_total{id="/",%s}[2m])) by (node)`, nodes)
		expectRounded(t, fmt.Sprintf(`(100 * %[1]s / sum(kube_node_status_capacity{resource="cpu",%[2]s}) by (node)) / %[1]s`, cpu, nodes), "node", 1000, both(25))
	})
	t.Run("per-pod containers", func(t *testing.T) {
		expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{container!="",namespace=%q}) by (node,pod,container)`, ns), "node,pod,container",
			map[string]float64{nodeA + "/web/app": 1, nodeA + "/web/sidecar": 1, nodeB + "/db/db": 1})
		// k8s-monitoring's drop: no pod-level duplicates without container.
		expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{container="",id!="/",%s})`, nodes), "", map[string]float64{})
	})
	t.Run("kube-prometheus-stack labels", func(t *testing.T) {
		expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{id="/",job="kubelet",metrics_path="/metrics/cadvisor",endpoint="https-metrics",service="kube-prometheus-stack-kubelet",%s}) by (node,instance)`, nodes),
			"node,instance", map[string]float64{nodeA + "/127.0.0.1:" + strconv.Itoa(ka.port): 1, nodeB + "/127.0.0.1:" + strconv.Itoa(kb.port): 1})
		expectQuery(t, fmt.Sprintf(`up{job="kubelet",%s}`, nodes), "node", both(1))
	})
	t.Run("a refusing and a silent node", func(t *testing.T) {
		expectQuery(t, fmt.Sprintf(`up{job="kubelet",node=~"%s|%s"}`, nodeF, nodeS), "node", map[string]float64{nodeF: 0, nodeS: 0})
		expectQuery(t, fmt.Sprintf(`count({job="kubelet",__name__!="up",node=~"%s|%s"})`, nodeF, nodeS), "", map[string]float64{})
		// The real nodes' samples stay fresh, and so do the state series:
		// the newest sample of each is younger than two intervals.
		expectQuery(t, fmt.Sprintf(`count(time() - timestamp(container_memory_working_set_bytes{id="/",%s}) < 3)`, nodes), "", map[string]float64{"": 2})
		expectQuery(t, `count(time() - timestamp(kube_node_info{node=~"kubelet-e2e-.*"}) < 3)`, "", map[string]float64{"": 4})
		body, err := httpGet(a.url("/metrics"))
		require.NoError(t, err)
		for _, line := range []string{
			`kube_state_push_kubelet_read_errors_total{node="` + nodeF + `",path="/metrics/cadvisor",reason="forbidden"} `,
			`kube_state_push_kubelet_read_errors_total{node="` + nodeS + `",path="/metrics/cadvisor",reason="timeout"} `,
			`kube_state_push_kubelet_read_success{node="` + nodeA + `",path="/metrics/cadvisor"} 1`,
			`kube_state_push_kubelet_read_success{node="` + nodeF + `",path="/metrics/cadvisor"} 0`,
			`kube_state_push_kubelet_read_errors_total{node="` + nodeA + `",path="/metrics/cadvisor",reason="forbidden"} 0`,
		} {
			require.Contains(t, body, line)
		}
		require.Regexp(t, `kube_state_push_kubelet_read_samples\{node="`+nodeA+`",path="/metrics/cadvisor"\} [1-9]`, body)
	})
	t.Run("deleted node is stale at once", func(t *testing.T) {
		kb.proc.Stop(10 * time.Second) // or it registers its node again
		require.NoError(t, client.CoreV1().Nodes().Delete(ctx, nodeB, metav1.DeleteOptions{}))
		start := time.Now()
		expectQuery(t, fmt.Sprintf(`count({job="kubelet",node=%q})`, nodeB), "", map[string]float64{})
		t.Logf("series of the deleted node gone from instant queries after %s", time.Since(start).Round(100*time.Millisecond))
		expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{id="/",%s}) by (node)`, nodes), "node", map[string]float64{nodeA: 1})
	})
	require.NoError(t, a.stop(), "the agent stops cleanly, with nothing dropped")
}

// tlsServer serves h over HTTPS with the kubelets' certificate.
func tlsServer(t *testing.T, tl kubeletTLS, h http.Handler) *httptest.Server {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(tl.certFile, tl.keyFile)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	return srv
}

// fakeNode creates a node whose kubelet is the server at url (https:// or
// http://127.0.0.1:<port>).
func fakeNode(t *testing.T, c kubernetes.Interface, name, url string) {
	t.Helper()
	_, portText, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://"))
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// expectRounded waits until q's values, times scale and rounded, equal
// want times scale.
func expectRounded(t *testing.T, q, by string, scale float64, want map[string]float64) {
	t.Helper()
	eventually(t, 60*time.Second, q, func() error {
		got, err := queryBy(context.Background(), q, by)
		if err != nil {
			return err
		}
		for k, v := range got {
			got[k] = float64(int64(v*scale+0.5)) / scale
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			return fmt.Errorf("got %v, want %v", sorted(got), sorted(want))
		}
		return nil
	})
}

// expectPositive waits until q gives a positive value for exactly keys.
func expectPositive(t *testing.T, q, by string, keys []string) {
	t.Helper()
	eventually(t, 30*time.Second, q, func() error {
		got, err := queryBy(context.Background(), q, by)
		if err != nil {
			return err
		}
		if len(got) != len(keys) {
			return fmt.Errorf("got %v, want keys %v", sorted(got), keys)
		}
		for _, k := range keys {
			if got[k] <= 0 {
				return fmt.Errorf("got %v, want keys %v positive", sorted(got), keys)
			}
		}
		return nil
	})
}
