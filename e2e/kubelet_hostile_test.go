package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// vmHWM returns the peak resident set of a process, in bytes, from
// /proc/<pid>/status.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// gib is the size of the hostile kubelets' large body.
const gib = 1 << 30

// streamGiB is a kubelet that streams a 1 GiB body, written in chunks
// until the reader hangs up. It counts its requests in reads and keeps the
// most bytes it wrote for one in maxSent.
func streamGiB(reads, maxSent *atomic.Int64) http.HandlerFunc {
	chunk := []byte(strings.Repeat("container_memory_rss{id=\"/a-long-enough-cgroup-path\"} 1\n", 1024))
	return func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		var sent int64
		for sent < gib { // bounded: at most 1 GiB per request
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				break
			}
		}
		for {
			m := maxSent.Load()
			if sent <= m || maxSent.CompareAndSwap(m, sent) {
				return
			}
		}
	}
}

// TestKubeletHostileBodies puts three hostile kubelets on Node addresses,
// each with the kubelets' certificate, beside the agent binary with the
// default limits. One forges the agent's labels, kube_* series, a foreign
// family and timestamps far from now; one streams 1 GiB; one serves
// 120,000 series. Nothing forged reaches the receiver, the large bodies
// fail their reads (up 0, nothing of them kept), and the agent's peak RSS
// stays far below what the bodies would need.
func TestKubeletHostileBodies(t *testing.T) {
	needEnv(t)
	client, err := env.cp.Client()
	require.NoError(t, err)
	dir := t.TempDir()
	tl := writeKubeletTLS(t, dir)

	now := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }
	forge := tlsServer(t, tl, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `container_cpu_usage_seconds_total{job="forged",node="victim",instance="10.9.9.9:1",metrics_path="/forged",cluster="other",namespace="shop",pod="web",container="app",image="app:1",id="/x"} 1
kube_pod_status_ready{namespace="kube-system",pod="coredns-forged",condition="true"} 1
up 1
haproxy_up 1
kubelet_hostile_old 1 %s
kubelet_hostile_future 1 %s
kubelet_hostile_ok 1
`, now(-time.Hour), now(time.Hour))
	}))
	defer forge.Close()

	var hugeMax, hugeReads atomic.Int64
	huge := tlsServer(t, tl, streamGiB(&hugeReads, &hugeMax))
	defer huge.Close()

	var many strings.Builder
	for i := range 120_000 {
		fmt.Fprintf(&many, "container_hostile_series{i=\"%d\"} 1\n", i)
	}
	manyBody := []byte(many.String())
	manySrv := tlsServer(t, tl, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(manyBody) }))
	defer manySrv.Close()

	nodeForge, nodeHuge, nodeMany := "kubelet-hostile-forge", "kubelet-hostile-huge", "kubelet-hostile-many"
	fakeNode(t, client, nodeForge, forge.URL)
	fakeNode(t, client, nodeHuge, huge.URL)
	fakeNode(t, client, nodeMany, manySrv.URL)
	t.Cleanup(func() { cleanupNodes(t, client, []string{nodeForge, nodeHuge, nodeMany}) })

	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("e2e-token\n"), 0o600))
	cfg := pipelineConfig()
	cfg.Resources = []string{"nodes"}
	cfg.Kubelet = newKubelet("direct", tl.caFile)
	cfg.Kubelet.BearerTokenFile = &token
	a := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})

	nodes := `node=~"kubelet-hostile-.*"`
	expectQuery(t, `up{job="kubelet",`+nodes+`}`, "node", map[string]float64{nodeForge: 1, nodeHuge: 0, nodeMany: 0})

	t.Run("forged labels and series", func(t *testing.T) {
		// The forged labels moved to exported_*; the agent's own won.
		expectQuery(t, `container_cpu_usage_seconds_total{node="`+nodeForge+`"}`, "job,cluster,metrics_path,exported_job,exported_node,exported_cluster,exported_instance",
			map[string]float64{"kubelet/e2e//metrics/cadvisor/forged/victim/other/10.9.9.9:1": 1})
		expectQuery(t, `kubelet_hostile_ok{node="`+nodeForge+`"}`, "job", map[string]float64{"kubelet": 1})
		for _, q := range []string{
			`{job="forged"}`, `{node="victim"}`, `{cluster="other"}`, `{metrics_path="/forged"}`,
			`{__name__=~"kube_.+",pod="coredns-forged"}`,
			`haproxy_up`, `kubelet_hostile_old`, `kubelet_hostile_future`,
		} {
			got, err := queryBy(t.Context(), `count(`+q+`)`, "")
			require.NoError(t, err)
			require.Empty(t, got, "%s reached the receiver", q)
		}
		m := a.metrics(t)
		for _, reason := range []string{"kube_prefix", "family", "too_old", "too_new"} {
			require.Positive(t, m.value(t, "kube_state_push_kubelet_dropped_samples_total", map[string]string{"node": nodeForge, "reason": reason}), reason)
		}
	})

	t.Run("1 GiB body", func(t *testing.T) {
		eventually(t, 30*time.Second, "three reads of the 1 GiB kubelet", func() error {
			if n := hugeReads.Load(); n < 3 {
				return fmt.Errorf("%d reads", n)
			}
			return nil
		})
		m := a.metrics(t)
		require.Positive(t, m.value(t, "kube_state_push_kubelet_read_errors_total", map[string]string{"node": nodeHuge, "reason": "body_size_limit"}))
		got, err := queryBy(t.Context(), `count({job="kubelet",node="`+nodeHuge+`",__name__!="up"})`, "")
		require.NoError(t, err)
		require.Empty(t, got, "nothing of a body over the limit is kept")
		sent := hugeMax.Load()
		require.Greater(t, sent, int64(16<<20), "the agent read up to the limit")
		require.Less(t, sent, int64(gib), "and hung up long before 1 GiB")
		hwm := vmHWM(t, a.cmd.Process.Pid)
		t.Logf("1 GiB kubelet: %d reads, at most %d MiB written per read; agent peak RSS %d MiB", hugeReads.Load(), sent>>20, hwm>>20)
		require.Less(t, hwm, int64(320<<20), "the agent's peak RSS stays far below the body, and within a 512 MiB container")
	})

	t.Run("120,000 series over sample_limit", func(t *testing.T) {
		m := a.metrics(t)
		require.Positive(t, m.value(t, "kube_state_push_kubelet_read_errors_total", map[string]string{"node": nodeMany, "reason": "sample_limit"}))
		got, err := queryBy(t.Context(), `count({job="kubelet",node="`+nodeMany+`",__name__!="up"})`, "")
		require.NoError(t, err)
		require.Empty(t, got, "nothing of a read over sample_limit is kept")
	})
	require.NoError(t, a.stop())
}

// TestKubeletHostileBodyThroughAPIServer streams 1 GiB from a fake
// kubelet through the API server's node proxy: in apiserver mode too the
// read stops at body_size_limit (client-go's own request would read it
// whole), up is 0, and the agent's peak RSS stays bounded. The proxy
// refuses loopback kubelets, so the fake listens on this machine's other
// address.
func TestKubeletHostileBodyThroughAPIServer(t *testing.T) {
	needEnv(t)
	ip := hostAddress()
	if ip == "" {
		t.Skip("no non-loopback address: the node proxy refuses loopback kubelets")
	}
	client, err := env.cp.Client()
	require.NoError(t, err)
	tl := writeKubeletTLS(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(tl.certFile, tl.keyFile)
	require.NoError(t, err)
	var maxSent, reads atomic.Int64
	srv := httptest.NewUnstartedServer(streamGiB(&reads, &maxSent))
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port

	node := "kubelet-hostile-proxy"
	n, err := client.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cleanupNodes(t, client, []string{node}) })
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: ip}, {Type: v1.NodeInternalIP, Address: ip}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	_, err = client.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
	require.NoError(t, err)

	cfg := pipelineConfig()
	cfg.Resources = []string{"nodes"}
	cfg.Kubelet = newKubelet("apiserver", "")
	cfg.Kubelet.Timeout = 5 * time.Second
	cfg.Kubelet.Interval = 6 * time.Second
	a := startAgent(t, agentOptions{binary: true, config: cfg, waitReady: true})
	expectQuery(t, `up{job="kubelet",node="`+node+`"}`, "node", map[string]float64{node: 0})
	eventually(t, 30*time.Second, "a read failed on body_size_limit", func() error {
		m := a.metrics(t)
		if v := m.value(t, "kube_state_push_kubelet_read_errors_total", map[string]string{"node": node, "reason": "body_size_limit"}); v == 0 {
			return fmt.Errorf("no body_size_limit error yet")
		}
		return nil
	})
	got, err := queryBy(t.Context(), `count({job="kubelet",node="`+node+`",__name__!="up"})`, "")
	require.NoError(t, err)
	require.Empty(t, got, "nothing of a body over the limit is kept")
	sent := maxSent.Load()
	require.Less(t, sent, int64(gib), "the read stopped long before 1 GiB")
	hwm := vmHWM(t, a.cmd.Process.Pid)
	t.Logf("1 GiB through the node proxy: %d reads, at most %d MiB written per read; agent peak RSS %d MiB", reads.Load(), sent>>20, hwm>>20)
	require.Less(t, hwm, int64(320<<20))
	require.NoError(t, a.stop())
}
