package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/queue"
)

// storedCounter reads a receiver's own count of stored samples.
type storedCounter func(ctx context.Context) (float64, error)

// requireStored waits until the receiver's count of stored samples is the
// samples the endpoint says it sent: every sample landed, none twice.
func requireStored(t *testing.T, ctx context.Context, a *testAgent, endpoint string, stored storedCounter) float64 {
	t.Helper()
	sent := a.metric(t, "kube_state_push_remote_samples_sent_total", map[string]string{"endpoint": endpoint})
	require.Positive(t, sent, endpoint)
	eventually(t, 30*time.Second, endpoint+": the receiver's count of stored samples", func() error {
		n, err := stored(ctx)
		if err != nil {
			return err
		}
		if n != sent {
			return fmt.Errorf("%s: the receiver stored %g samples, the agent sent %g", endpoint, n, sent)
		}
		return nil
	})
	return sent
}

// protocol: auto against the real receivers: VictoriaMetrics answers the
// probe and gets its own protocol (zstd), Prometheus does not and gets
// Remote-Write 2.0, which it accepts. Each receiver's own count of stored
// samples equals what the agent says it sent.
func TestProtocolAutoNegotiates(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "protocol-auto"
	createPods(ctx, t, client, ns, "pod-a", "pod-b", "pod-c")
	defer deleteNamespace(t, client, ns)

	vm := startVM(t)
	prom := startPrometheus(t)
	conf := captureConfig(vm.WriteURL())
	conf.Resources, conf.Namespaces = []string{"pods"}, []string{ns}
	conf.endpoint().Name, conf.endpoint().Protocol = "vm", queue.ProtocolAuto
	promEndpoint := newEndpoint("prom", prom.WriteURL())
	promEndpoint.Protocol = queue.ProtocolAuto
	conf.RemoteWrite = append(conf.RemoteWrite, promEndpoint)
	a := startAgent(t, agentOptions{ctx: ctx, config: conf})
	a.waitDelivered(t, map[string]string{"endpoint": "vm"}, 4)
	a.waitDelivered(t, map[string]string{"endpoint": "prom"}, 4)
	require.NoError(t, a.stop())

	m := a.metrics(t)
	vmLabels, promLabels := map[string]string{"endpoint": "vm"}, map[string]string{"endpoint": "prom"}
	require.Equal(t, 1.0, m.value(t, "kube_state_push_remote_victoriametrics_protocol", vmLabels))
	require.Equal(t, 1.0, m.value(t, "kube_state_push_remote_protocol_version", vmLabels))
	require.Equal(t, 0.0, m.value(t, "kube_state_push_remote_victoriametrics_protocol", promLabels))
	require.Equal(t, 2.0, m.value(t, "kube_state_push_remote_protocol_version", promLabels))
	for _, ep := range []map[string]string{vmLabels, promLabels} {
		require.Zero(t, m.value(t, "kube_state_push_remote_protocol_fallbacks_total", ep), "no fallback: %v", ep)
	}
	a.requireNothingDropped(t, "vm")
	a.requireNothingDropped(t, "prom")
	require.Contains(t, a.logs.String(), "receiver speaks VictoriaMetrics' protocol")

	vmSent := requireStored(t, ctx, a, "vm", vm.StoredSamples)
	promSent := requireStored(t, ctx, a, "prom", prom.StoredSamples)
	vmBytes := m.value(t, "kube_state_push_remote_sent_bytes_total", vmLabels)
	promBytes := m.value(t, "kube_state_push_remote_sent_bytes_total", promLabels)
	// The same series to both: zstd 1.0 is smaller than snappy 2.0 even on
	// a few pods.
	require.Less(t, vmBytes/vmSent, promBytes/promSent)

	series, err := vm.Export(ctx, `kube_pod_info{namespace="`+ns+`"}`)
	require.NoError(t, err)
	require.Len(t, series, 3, "every pod at VictoriaMetrics")
	t.Logf("vm: %g samples stored, %.2f bytes a sample; prom: %g samples stored, %.2f bytes a sample",
		vmSent, vmBytes/vmSent, promSent, promBytes/promSent)
}

// protocol: victoriametrics is sent as set, even to a receiver that does
// not speak it: Prometheus refuses every request (415), nothing falls back.
// protocol: prometheus to VictoriaMetrics is plain Remote-Write 1.0.
func TestProtocolExplicit(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "protocol-explicit"
	createPods(ctx, t, client, ns, "pod-a")
	defer deleteNamespace(t, client, ns)

	vm := startVM(t)
	prom := startPrometheus(t)
	conf := captureConfig(vm.WriteURL())
	conf.Resources, conf.Namespaces = []string{"pods"}, []string{ns}
	conf.endpoint().Name, conf.endpoint().Protocol = "vm", queue.ProtocolPrometheus
	forced := newEndpoint("prom", prom.WriteURL())
	forced.Protocol = queue.ProtocolVictoriaMetrics
	conf.RemoteWrite = append(conf.RemoteWrite, forced)
	a := startAgent(t, agentOptions{ctx: ctx, config: conf})
	a.waitDelivered(t, map[string]string{"endpoint": "vm"}, 3)
	eventually(t, 30*time.Second, "Prometheus refuses zstd", func() error {
		if n := a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "prom", "reason": queue.ReasonUnsupported}); n == 0 {
			return fmt.Errorf("nothing refused yet")
		}
		return nil
	})
	require.NoError(t, a.stop())

	m := a.metrics(t)
	require.Equal(t, 0.0, m.value(t, "kube_state_push_remote_victoriametrics_protocol", map[string]string{"endpoint": "vm"}))
	require.Equal(t, 1.0, m.value(t, "kube_state_push_remote_victoriametrics_protocol", map[string]string{"endpoint": "prom"}))
	require.Zero(t, m.value(t, "kube_state_push_remote_protocol_fallbacks_total", map[string]string{"endpoint": "prom"}))
	require.Zero(t, m.value(t, "kube_state_push_remote_samples_sent_total", map[string]string{"endpoint": "prom"}))
	stored, err := prom.StoredSamples(ctx)
	require.NoError(t, err)
	require.Zero(t, stored)
	a.requireNothingDropped(t, "vm")
	requireStored(t, ctx, a, "vm", vm.StoredSamples)
}

// probeLiar answers VictoriaMetrics' protocol probe with "1" itself and
// passes every other request to target: a gateway that claims the protocol
// for a receiver that does not speak it.
func probeLiar(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("get_vm_proto_version") != "" {
			_, _ = io.WriteString(w, "1")
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// protocol: auto told yes by the probe, but refused by the receiver: the
// real Prometheus refuses the zstd request, the endpoint resends it at once
// as snappy 1.0 and keeps to 1.0, as vmagent does. Every sample is stored
// once.
func TestProtocolAutoFallsBack(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "protocol-fallback"
	createPods(ctx, t, client, ns, "pod-a", "pod-b")
	defer deleteNamespace(t, client, ns)

	prom := startPrometheus(t)
	front, err := url.Parse(prom.WriteURL())
	require.NoError(t, err)
	conf := captureConfig(probeLiar(t, prom.URL) + front.Path)
	conf.Resources, conf.Namespaces = []string{"pods"}, []string{ns}
	conf.endpoint().Name, conf.endpoint().Protocol = "prom", queue.ProtocolAuto
	a := startAgent(t, agentOptions{ctx: ctx, config: conf})
	a.waitDelivered(t, map[string]string{"endpoint": "prom"}, 4)
	require.NoError(t, a.stop())

	labels := map[string]string{"endpoint": "prom"}
	m := a.metrics(t)
	require.Equal(t, 1.0, m.value(t, "kube_state_push_remote_protocol_fallbacks_total",
		map[string]string{"endpoint": "prom", "reason": queue.FallbackVMRefused}))
	require.Equal(t, 0.0, m.value(t, "kube_state_push_remote_victoriametrics_protocol", labels))
	require.Equal(t, 1.0, m.value(t, "kube_state_push_remote_protocol_version", labels))
	refused := m.value(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "prom", "code": "415"}) +
		m.value(t, "kube_state_push_remote_requests_total", map[string]string{"endpoint": "prom", "code": "400"})
	require.Equal(t, 1.0, refused, "one zstd request refused")
	a.requireNothingDropped(t, "prom")
	requireStored(t, ctx, a, "prom", prom.StoredSamples)
}
