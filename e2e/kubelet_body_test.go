package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// cadvisorBody30 is the hollow kubelet's /metrics/cadvisor for a node with
// 30 containers (10 pods of 3), which kubelet/'s benchmark reads. Run
// with KSP_WRITE_KUBELET_TESTDATA=1 to write it again.
const cadvisorBody30 = "../kubelet/testdata/cadvisor-30containers.txt"

// TestKubeletCadvisorBody30 reads /metrics/cadvisor from a hollow kubelet
// with 10 pods of 3 containers: the kubelet's own collector writes a
// series per container of each family, and the node root.
func TestKubeletCadvisorBody30(t *testing.T) {
	needEnv(t)
	client, err := env.cp.Client()
	require.NoError(t, err)
	tl := writeKubeletTLS(t, t.TempDir())
	node := "kubelet-e2e-30"
	hk := startHollowKubelet(t, client, node, tl)
	t.Cleanup(func() { cleanupNodes(t, client, []string{node}) })
	ns := "kubelet-e2e-30"
	createNamespace(t, client, ns)
	pods := map[string][]string{}
	for i := range 10 {
		pods[fmt.Sprintf("pod-%d", i)] = []string{"app", "sidecar", "proxy"}
	}
	bindPods(t, client, ns, node, pods)

	var body []byte
	eventually(t, 60*time.Second, "30 containers in /metrics/cadvisor", func() error {
		body = hk.get(t, tl, "/metrics/cadvisor")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			return err
		}
		ws := fams["container_memory_working_set_bytes"]
		if ws == nil {
			return fmt.Errorf("no container_memory_working_set_bytes")
		}
		containers, root := 0, 0
		for _, m := range ws.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "container" && l.GetValue() != "":
					containers++
				case l.GetName() == "id" && l.GetValue() == "/":
					root++
				}
			}
			if m.TimestampMs == nil {
				return fmt.Errorf("a sample without a timestamp")
			}
		}
		if containers != 30 || root != 1 {
			return fmt.Errorf("%d containers and %d roots, want 30 and 1", containers, root)
		}
		return nil
	})
	t.Logf("/metrics/cadvisor for 30 containers: %d bytes", len(body))
	if os.Getenv("KSP_WRITE_KUBELET_TESTDATA") == "1" {
		require.NoError(t, os.WriteFile(filepath.Clean(cadvisorBody30), body, 0o644))
	}
}
