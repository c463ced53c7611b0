package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// write_relabel_configs apply to their endpoint only. Two endpoints push the
// same pods to the shared Prometheus: "plain" as rendered, "relabeled"
// through rules that drop the kube_pod_container_* families, drop the uid
// label, copy node into host, and add via="relabeled". Prometheus then holds
// both: the relabeled series as the rules say, the plain ones untouched.
func TestWriteRelabelConfigs(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	client, err := env.cp.Client()
	require.NoError(t, err)
	ns := "relabel"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "relabel")
	require.NoError(t, err)
	defer cleanupNodes(t, client, sc.Nodes)

	cfg := captureConfig(env.prom.WriteURL())
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ExternalLabels = map[string]string{"run": "relabel"}
	cfg.endpoint().Name = "plain"
	relabeled := newEndpoint("relabeled", env.prom.WriteURL())
	relabeled.Extra = map[string]any{"write_relabel_configs": yamlValue(t, `
- source_labels: [__name__]
  regex: kube_pod_container_.*
  action: drop
- action: labeldrop
  regex: uid
- source_labels: [node]
  target_label: host
- target_label: via
  replacement: relabeled
`)}
	cfg.RemoteWrite = append(cfg.RemoteWrite, relabeled)
	stop := startAgent(t, agentOptions{config: cfg}).stop

	sel := fmt.Sprintf(`run="relabel",namespace=%q`, ns)
	// The plain endpoint's series, to compare with.
	var plain map[string]float64
	eventually(t, 30*time.Second, "the plain endpoint's pods", func() error {
		plain, err = queryBy(ctx, fmt.Sprintf(`kube_pod_info{%s,via=""}`, sel), "pod,uid,node")
		if err != nil {
			return err
		}
		if len(plain) != len(sc.Pods) {
			return fmt.Errorf("%d pods, want %d", len(plain), len(sc.Pods))
		}
		return nil
	})

	t.Run("replace and labeldrop change the labels", func(t *testing.T) {
		want := map[string]float64{}
		for k, v := range plain {
			parts := strings.Split(k, "/")
			pod, uid, node := parts[0], parts[1], parts[2]
			require.NotEmpty(t, uid, "the plain series keep uid")
			want[pod+"/"+node+"/"+node+"/"] = v
		}
		// host copies node (both empty for the pending pod); uid is gone.
		expectQuery(t, fmt.Sprintf(`kube_pod_info{%s,via="relabeled"}`, sel), "pod,node,host,uid", want)
	})

	t.Run("drop removes a family from that endpoint only", func(t *testing.T) {
		containers, err := queryBy(ctx, fmt.Sprintf(`count(kube_pod_container_info{%s}) by (via)`, sel), "via")
		require.NoError(t, err)
		require.Len(t, containers, 1, "only the plain endpoint's: %v", containers)
		require.Positive(t, containers[""])
		// Other families of the relabeled endpoint are there.
		expectQuery(t, fmt.Sprintf(`count(kube_pod_status_phase{%s,via="relabeled"}) > 0`, sel), "", map[string]float64{"": float64(5 * len(sc.Pods))})
	})

	require.NoError(t, stop(), "the agent stops cleanly, with nothing dropped")
}
