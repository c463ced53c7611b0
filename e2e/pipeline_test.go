package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// pipelineConfig is the configuration of the pipeline and kubelet tests:
// the nodes and pods of the shared control plane, pushed to the shared
// Prometheus every second.
func pipelineConfig() *agentConfig {
	c := newConfig(env.prom.WriteURL())
	c.Resources = []string{"nodes", "pods"}
	c.ListenAddress = ptr.To("127.0.0.1:0")
	c.ShutdownTimeout = 10 * time.Second
	c.ExternalLabels = map[string]string{"cluster": "e2e"}
	c.endpoint().Name = "prometheus"
	c.endpoint().QueueConfig.MaxBackoff = 200 * time.Millisecond
	return c
}

func TestPipelinePodsAndNodes(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "pipeline"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "pipeline")
	require.NoError(t, err)
	nodeA, nodeB := sc.Nodes[0], sc.Nodes[1]

	a := startAgent(t, agentOptions{config: pipelineConfig()})
	eventually(t, 30*time.Second, "/readyz", func() error { return httpStatus(a.url("/readyz"), 200) })

	sel := fmt.Sprintf(`namespace=%q`, ns)
	t.Run("dashboard queries", func(t *testing.T) {
		expectQuery(t, fmt.Sprintf(`sum(kube_pod_status_phase{%s,phase="Running"})`, sel), "", map[string]float64{"": 4})
		expectQuery(t, fmt.Sprintf(`kube_pod_status_phase{%s} == 1`, sel), "pod", map[string]float64{
			"running": 1, "notready": 1, "pending": 1, "crashloop": 1, "oomkilled": 1, "completed": 1,
		})
		expectQuery(t, fmt.Sprintf(`kube_pod_container_status_waiting_reason{%s} == 1`, sel), "reason", map[string]float64{"CrashLoopBackOff": 1})
		expectQuery(t, fmt.Sprintf(`kube_pod_container_status_terminated_reason{%s} == 1`, sel), "pod,container,reason",
			map[string]float64{"oomkilled/app/OOMKilled": 1, "completed/app/Completed": 1, "completed/sidecar/Completed": 1})
		expectQuery(t, fmt.Sprintf(`kube_pod_container_status_last_terminated_reason{%s}`, sel), "reason", map[string]float64{"Error": 1})
		expectQuery(t, fmt.Sprintf(`kube_pod_container_status_restarts_total{%s,container="app"} > 0`, sel), "pod", map[string]float64{"crashloop": 5, "oomkilled": 2})
		expectQuery(t, fmt.Sprintf(`sum(kube_pod_container_resource_requests{%s,resource="cpu"}) by (node)`, sel), "node",
			map[string]float64{nodeA: 0.6, nodeB: 0.9, "": 0.3})
		expectQuery(t, fmt.Sprintf(`kube_pod_container_resource_limits{%s,resource="memory",pod="running"}`, sel), "container",
			map[string]float64{"app": 256 << 20, "sidecar": 64 << 20})
		expectQuery(t, `kube_node_status_allocatable{resource="pods",node=~"pipeline-.*"}`, "node", map[string]float64{nodeA: 110, nodeB: 110})
		expectQuery(t, `kube_node_status_capacity{resource="cpu",unit="core",node=~"pipeline-.*"}`, "node", map[string]float64{nodeA: 4, nodeB: 4})
		// The API server's TaintNodesByCondition admission adds not-ready.
		expectQuery(t, `kube_node_spec_taint{node=~"pipeline-.*"}`, "node,key,value,effect", map[string]float64{
			nodeB + "/dedicated/batch/NoSchedule":               1,
			nodeA + "/node.kubernetes.io/not-ready//NoSchedule": 1,
			nodeB + "/node.kubernetes.io/not-ready//NoSchedule": 1,
		})
		expectQuery(t, fmt.Sprintf(`count(kube_pod_info{%s,cluster="e2e"})`, sel), "", map[string]float64{"": 6})
		expectQuery(t, fmt.Sprintf(`kube_pod_status_ready{%s,condition="true"}`, sel), "pod", map[string]float64{
			"running": 1, "notready": 0, "crashloop": 0, "oomkilled": 0, "completed": 0,
		})
	})

	t.Run("updates", func(t *testing.T) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "notready", metav1.GetOptions{})
		require.NoError(t, err)
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == v1.PodReady || p.Status.Conditions[i].Type == v1.ContainersReady {
				p.Status.Conditions[i].Status = v1.ConditionTrue
			}
		}
		_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
		expectQuery(t, fmt.Sprintf(`kube_pod_status_ready{%s,condition="true",pod="notready"}`, sel), "pod", map[string]float64{"notready": 1})
	})

	t.Run("changed label value is stale at once", func(t *testing.T) {
		n, err := client.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
		require.NoError(t, err)
		n.Status.NodeInfo.KernelVersion = "6.12.0"
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
		// Without a staleness marker the old series would stay in
		// instant queries for 5 minutes, and the count would be 2.
		expectQuery(t, fmt.Sprintf(`kube_node_info{node=%q}`, nodeA), "kernel_version", map[string]float64{"6.12.0": 1})
	})

	t.Run("deleted pod is stale at once", func(t *testing.T) {
		zero := int64(0)
		require.NoError(t, client.CoreV1().Pods(ns).Delete(ctx, "crashloop", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		start := time.Now()
		expectQuery(t, fmt.Sprintf(`count({%s,pod="crashloop"})`, sel), "", map[string]float64{})
		t.Logf("series of the deleted pod gone from instant queries after %s", time.Since(start).Round(100*time.Millisecond))
		expectQuery(t, fmt.Sprintf(`count(kube_pod_info{%s})`, sel), "", map[string]float64{"": 5})
	})

	t.Run("self-metrics", func(t *testing.T) {
		body, err := httpGet(a.url("/metrics"))
		require.NoError(t, err)
		require.Contains(t, body, `kube_state_push_remote_samples_dropped_total{endpoint="prometheus",reason="bad_request"} 0`)
		require.Contains(t, body, `kube_state_push_resource_synced{resource="pods"} 1`)
		require.Regexp(t, `kube_state_push_remote_samples_sent_total\{endpoint="prometheus"\} [1-9]`, body)
		require.Regexp(t, `kube_state_push_stale_markers_total\{resource="pods"\} [1-9]`, body)
	})

	require.NoError(t, a.stop(), "the agent stops cleanly, with nothing dropped")
	cleanupNodes(t, client, sc.Nodes)
}
