package deploy_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The kubelet section's RBAC (deploy/kubelet) adds to the base exactly get
// on the one subresource its mode needs: nodes/metrics for direct,
// nodes/proxy for apiserver. The test builds the overlay docs/kubelet.md
// describes (the base, the patch, the configuration with the section) and
// renders it in-process and, with kubectl at hand, with kubectl.
func TestKubeletRBAC(t *testing.T) {
	base := verbsGranted(t, renderKustomization(t, "base"))
	require.Equal(t, "list,watch", base["nodes"], "the node list comes from the nodes watch")
	for mode, sub := range map[string]string{"direct": "nodes/metrics", "apiserver": "nodes/proxy"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			patch := "clusterrole-" + mode + ".yaml"
			require.NoError(t, os.WriteFile(filepath.Join(dir, patch), mustRead(t, filepath.Join("kubelet", patch)), 0o600))
			cfg := string(mustRead(t, "base/config.yaml")) + "\nkubelet:\n  mode: " + mode + "\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, configFile), []byte(cfg), 0o600))
			abs, err := filepath.Abs("base")
			require.NoError(t, err)
			rel, err := filepath.Rel(dir, abs)
			require.NoError(t, err)
			k, err := yaml.Marshal(map[string]any{
				"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
				"namespace": "kube-state-push",
				"resources": []string{rel},
				"configMapGenerator": []map[string]any{{
					"name": configMapName, "behavior": "replace", "files": []string{configFile},
				}},
				"patches": []map[string]any{{
					"path": patch, "target": map[string]string{"kind": "ClusterRole", "name": "kube-state-push"},
				}},
			})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), k, 0o600))

			r := renderKustomization(t, dir)
			loaded := loadRendered(t, dir, r)
			require.NotNil(t, loaded.Kubelet)
			require.Equal(t, mode, loaded.Kubelet.Mode)
			want := map[string]string{}
			for gr, v := range base {
				want[gr] = v
			}
			want[sub] = "get"
			require.Equal(t, want, verbsGranted(t, r))
			for _, other := range []string{"nodes/metrics", "nodes/proxy", "nodes/stats", "nodes/log"} {
				if other != sub {
					require.NotContains(t, verbsGranted(t, r), other)
				}
			}
			if out, ok := renderOverlay(t, dir); ok {
				require.Contains(t, out, sub)
				require.Equal(t, 1, strings.Count(out, "nodes/"), "one node subresource in what kubectl renders")
			}
			// The chart's kubelet value grants exactly what the patch does.
			if haveHelm(t) {
				c := renderChart(t, "--set", "remoteWrite[0].url=http://prometheus:9090/api/v1/write",
					"--set", "kubelet.enabled=true", "--set", "kubelet.mode="+mode, "--set", "kubelet.config.interval=1m",
					"--set", "kubelet.allowNodesProxyWhichAllowsExec="+strconv.FormatBool(mode == "apiserver"))
				require.Equal(t, want, verbsGranted(t, c), "the chart's ClusterRole with kubelet.mode %s", mode)
				chartCfg := loadRendered(t, "chart", c)
				require.NotNil(t, chartCfg.Kubelet)
				require.Equal(t, mode, chartCfg.Kubelet.Mode)
				require.Equal(t, time.Minute, chartCfg.Kubelet.Interval, "kubelet.config passes through")
			}
		})
	}
}
