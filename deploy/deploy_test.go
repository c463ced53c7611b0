// Package deploy_test checks the Kubernetes manifests in deploy/base against
// the code: the ClusterRole grants exactly what the agent watches, read-only,
// and the example configuration loads.
package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/agent"
	"github.com/kube-state-push/kube-state-push/watch"
)

// The ClusterRole grants get, list and watch on exactly the resources the
// agent can watch: no more, no less.
func TestClusterRole(t *testing.T) {
	data, err := os.ReadFile("base/clusterrole.yaml")
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	require.Equal(t, "ClusterRole", role.Kind)

	var got []string
	for i, rule := range role.Rules {
		require.Equal(t, []string{"get", "list", "watch"}, rule.Verbs, "rule %d verbs", i)
		require.Empty(t, rule.ResourceNames, "rule %d", i)
		require.Empty(t, rule.NonResourceURLs, "rule %d", i)
		require.True(t, sort.StringsAreSorted(rule.Resources), "rule %d: resources sorted", i)
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				got = append(got, g+"/"+r)
			}
		}
	}
	var want []string
	for _, r := range watch.All() {
		gr := r.GroupResource()
		want = append(want, gr.Group+"/"+gr.Resource)
	}
	sort.Strings(got)
	sort.Strings(want)
	require.Equal(t, want, got)
	require.Len(t, got, 39)
}

// The in-cluster example configuration is valid.
func TestConfig(t *testing.T) {
	data, err := os.ReadFile("base/config.yaml")
	require.NoError(t, err)
	cfg, err := agent.Load(data, "base/config.yaml")
	require.NoError(t, err)
	require.Empty(t, cfg.Watch.Kubeconfig, "in-cluster")
	require.Equal(t, watch.DefaultResources, cfg.Watch.Resources, "no resources key: the defaults")
}

// Every file the kustomization names exists.
func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("base/kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	files := k.Resources
	for _, g := range k.ConfigMapGenerator {
		files = append(files, g.Files...)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := os.Stat(filepath.Join("base", f))
		require.NoError(t, err, "kustomization.yaml names %s", f)
	}
}

// The sharded overlay names only files that exist, runs the agent with
// auto_sharding and the downward API env it needs, and grants no more than
// get on the agent's own StatefulSet.
func TestShardedOverlay(t *testing.T) {
	data, err := os.ReadFile("sharded/kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.Contains(t, k.Resources, "../base")
	files := k.Resources
	for _, g := range k.ConfigMapGenerator {
		files = append(files, g.Files...)
	}
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join("sharded", f))
		require.NoError(t, err, "kustomization.yaml names %s", f)
	}
	for _, f := range []string{"role.yaml", "rolebinding.yaml", "statefulset.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}

	data, err = os.ReadFile("sharded/role.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	require.Equal(t, "Role", role.Kind)
	require.Equal(t, "kube-state-push", role.Namespace)
	require.Len(t, role.Rules, 1)
	rule := role.Rules[0]
	require.Equal(t, []string{"apps"}, rule.APIGroups)
	require.Equal(t, []string{"statefulsets"}, rule.Resources)
	require.Equal(t, []string{"get"}, rule.Verbs)
	require.Equal(t, []string{"kube-state-push"}, rule.ResourceNames, "only its own StatefulSet")
	require.Empty(t, rule.NonResourceURLs)

	data, err = os.ReadFile("sharded/rolebinding.yaml")
	require.NoError(t, err)
	var rb rbacv1.RoleBinding
	require.NoError(t, yaml.UnmarshalStrict(data, &rb))
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, rb.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-state-push", Namespace: "kube-state-push"}}, rb.Subjects)

	data, err = os.ReadFile("sharded/config.yaml")
	require.NoError(t, err)
	cfg, err := agent.Load(data, "sharded/config.yaml")
	require.NoError(t, err)
	require.True(t, cfg.Watch.AutoSharding)

	data, err = os.ReadFile("sharded/statefulset.yaml")
	require.NoError(t, err)
	for _, s := range []string{"value: StatefulSet", "name: POD_NAME", "fieldPath: metadata.name", "name: POD_NAMESPACE", "fieldPath: metadata.namespace"} {
		require.Contains(t, string(data), s)
	}

	// With kubectl at hand, the overlay renders to a StatefulSet.
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl not found: the overlay is not rendered")
		return
	}
	out, err := exec.Command("kubectl", "kustomize", "sharded").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "kind: StatefulSet")
	require.NotContains(t, string(out), "kind: Deployment")
	require.Contains(t, string(out), "replicas: 2")
}

// The HA overlay names only files that exist, runs two replicas with
// leader_election on and the downward API env it needs, and grants get and
// update on the agent's own Lease and create on Leases, nothing more.
func TestHAOverlay(t *testing.T) {
	data, err := os.ReadFile("ha/kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Behavior string   `json:"behavior"`
			Files    []string `json:"files"`
		} `json:"configMapGenerator"`
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.Contains(t, k.Resources, "../base")
	files := k.Resources
	for _, g := range k.ConfigMapGenerator {
		require.Equal(t, "replace", g.Behavior)
		files = append(files, g.Files...)
	}
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join("ha", f))
		require.NoError(t, err, "kustomization.yaml names %s", f)
	}
	for _, f := range []string{"role.yaml", "rolebinding.yaml", "deployment.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}

	data, err = os.ReadFile("ha/role.yaml")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict(data, &role))
	require.Equal(t, "Role", role.Kind)
	require.Equal(t, "kube-state-push", role.Namespace)
	require.Equal(t, []rbacv1.PolicyRule{
		{
			APIGroups:     []string{"coordination.k8s.io"},
			Resources:     []string{"leases"},
			ResourceNames: []string{"kube-state-push"},
			Verbs:         []string{"get", "update"},
		},
		{
			// create cannot be restricted by name.
			APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"},
			Verbs:     []string{"create"},
		},
	}, role.Rules)

	data, err = os.ReadFile("ha/rolebinding.yaml")
	require.NoError(t, err)
	var rb rbacv1.RoleBinding
	require.NoError(t, yaml.UnmarshalStrict(data, &rb))
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, rb.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kube-state-push", Namespace: "kube-state-push"}}, rb.Subjects)

	// The Lease the config names is the one the Role grants; its namespace
	// and identity come from the pod's env.
	t.Setenv("POD_NAMESPACE", "kube-state-push")
	t.Setenv("POD_NAME", "kube-state-push-0")
	data, err = os.ReadFile("ha/config.yaml")
	require.NoError(t, err)
	cfg, err := agent.Load(data, "ha/config.yaml")
	require.NoError(t, err)
	le := cfg.LeaderElection
	require.True(t, le.Enabled)
	require.Equal(t, role.Rules[0].ResourceNames, []string{le.LeaseName})
	require.Equal(t, "kube-state-push", le.LeaseNamespace)
	require.Equal(t, "kube-state-push-0", le.Identity)

	data, err = os.ReadFile("ha/deployment.yaml")
	require.NoError(t, err)
	for _, s := range []string{"value: 2", "name: POD_NAME", "fieldPath: metadata.name", "name: POD_NAMESPACE", "fieldPath: metadata.namespace"} {
		require.Contains(t, string(data), s)
	}

	// With kubectl at hand, the overlay renders to a two-replica Deployment.
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Log("kubectl not found: the overlay is not rendered")
		return
	}
	out, err := exec.Command("kubectl", "kustomize", "ha").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "kind: Deployment")
	require.Contains(t, string(out), "replicas: 2")
	require.Contains(t, string(out), "leader_election:")
}
