package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/watch"
)

// TestKubeletSharded runs two agents sharded 0/2 and 1/2 over three hollow
// kubelets: each node's kubelet is read by exactly one of them, the one
// whose shard owns the node object (watch.OwnedBy, as for its state
// series).
func TestKubeletSharded(t *testing.T) {
	needEnv(t)
	c, err := env.cp.Client()
	require.NoError(t, err)
	tl := writeKubeletTLS(t, t.TempDir())
	nodes := []string{"kubelet-shard-a", "kubelet-shard-b", "kubelet-shard-c"}
	for _, n := range nodes {
		startHollowKubelet(t, c, n, tl)
	}
	t.Cleanup(func() { cleanupNodes(t, c, nodes) })
	want := map[string]float64{}
	for _, n := range nodes {
		obj, err := c.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		require.NoError(t, err)
		shard := 1
		if watch.OwnedBy(obj.UID, 0, 2) {
			shard = 0
		}
		want[fmt.Sprintf("%s/s%d", n, shard)] = 1
	}
	for shard := range 2 {
		cfg := pipelineConfig().set("shard", shard).set("total_shards", 2)
		cfg.Kubelet = newKubelet("", tl.caFile)
		cfg.Kubelet.BearerTokenFile = ptr.To("")
		cfg.Kubelet.TargetLabels = map[string]string{"replica": fmt.Sprintf("s%d", shard)}
		startAgent(t, agentOptions{config: cfg})
	}
	sel := `node=~"` + strings.Join(nodes, "|") + `"`
	expectQuery(t, fmt.Sprintf(`count(container_memory_working_set_bytes{id="/",%s}) by (node,replica)`, sel), "node,replica", want)
	expectQuery(t, fmt.Sprintf(`count(up{job="kubelet",%s}) by (node)`, sel), "node", map[string]float64{nodes[0]: 1, nodes[1]: 1, nodes[2]: 1})
	t.Logf("owners: %v", sorted(want))
}
