package deploy_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"
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

// kubelet.separateIdentity sends the kubelets the token of a second
// ServiceAccount that may only get nodes/metrics, as docs/kubelet.md
// describes: the chart creates that account, its token Secret and its
// binding, mounts the Secret, and points bearer_token_file at the token;
// the agent's own ClusterRole loses nodes/metrics. The kubelet keys of
// kubelet.config pass through.
func TestChartKubeletSeparateIdentity(t *testing.T) {
	if !haveHelm(t) {
		t.Skip("helm not built")
	}
	r := renderChart(t, "--set", "remoteWrite[0].url=http://prometheus:9090/api/v1/write",
		"--set", "kubelet.enabled=true", "--set", "kubelet.separateIdentity=true",
		"--set", "kubelet.config.address_types={InternalIP}", "--set", "kubelet.config.body_size_limit=8388608",
		"--set", "kubelet.config.sample_limit=5000")
	const name = "kube-state-push-kubelet"
	cfg := loadRendered(t, "chart", r)
	require.NotNil(t, cfg.Kubelet)
	require.Equal(t, "direct", cfg.Kubelet.Mode)
	require.Equal(t, "/var/run/secrets/kubelet-reader/token", cfg.Kubelet.BearerTokenFile)
	require.Equal(t, []string{"InternalIP"}, cfg.Kubelet.AddressTypes)
	require.Equal(t, int64(8<<20), cfg.Kubelet.BodySizeLimit)
	require.Equal(t, 5000, cfg.Kubelet.SampleLimit)

	sa := objectsOf[corev1.ServiceAccount](t, r, "ServiceAccount")[name]
	require.NotNil(t, sa, "the second ServiceAccount")
	require.Equal(t, ptr.To(false), sa.AutomountServiceAccountToken)
	secret := objectsOf[corev1.Secret](t, r, "Secret")[name+"-token"]
	require.NotNil(t, secret, "its token Secret")
	require.Equal(t, corev1.SecretTypeServiceAccountToken, secret.Type)
	require.Equal(t, name, secret.Annotations[corev1.ServiceAccountNameKey])

	roles := rules(t, r, "ClusterRole")
	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}}}, roles[name])
	for _, rule := range roles["kube-state-push"] {
		require.NotContains(t, rule.Resources, "nodes/metrics", "the agent's own token needs no kubelet grant")
	}
	binding := objectsOf[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding")[name]
	require.NotNil(t, binding)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "kube-state-push"}}, binding.Subjects)

	pod := r.workload(t).pod()
	require.Equal(t, name+"-token", secretVolumeOf(t, pod, pod.Containers[0], cfg.Kubelet.BearerTokenFile), "bearer_token_file is in the mounted Secret")

	// rbac.create false: the account and its token, the grant is the user's.
	noRBAC := renderChart(t, "--set", "remoteWrite[0].url=http://prometheus:9090/api/v1/write",
		"--set", "kubelet.enabled=true", "--set", "kubelet.separateIdentity=true", "--set", "rbac.create=false")
	require.Contains(t, objectsOf[corev1.ServiceAccount](t, noRBAC, "ServiceAccount"), name)
	require.Contains(t, objectsOf[corev1.Secret](t, noRBAC, "Secret"), name+"-token")
	require.Empty(t, rules(t, noRBAC, "ClusterRole"))
	require.Empty(t, objectsOf[rbacv1.ClusterRoleBinding](t, noRBAC, "ClusterRoleBinding"))

	// Off: none of it, and the agent's own token gets nodes/metrics.
	off := renderChart(t, "--set", "remoteWrite[0].url=http://prometheus:9090/api/v1/write", "--set", "kubelet.enabled=true")
	require.NotContains(t, objectsOf[corev1.ServiceAccount](t, off, "ServiceAccount"), name)
	require.NotContains(t, rules(t, off, "ClusterRole"), name)
	require.Equal(t, "get", verbsGranted(t, off)["nodes/metrics"])
	offCfg := loadRendered(t, "chart", off)
	require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", offCfg.Kubelet.BearerTokenFile, "the agent's own token")
}
