// Package deploy_test checks the Kubernetes manifests in deploy/ against
// the code: the ClusterRole grants list and watch on exactly what the agent
// watches,
// the configurations load, every kustomization runs each endpoint with a
// disk buffer of its own on a writable volume (diskbuffer_test.go, on
// kustomizations rendered by render_test.go), and the install walkthrough
// (the README's and docs/install.md) refers only to what exists.
package deploy_test

import (
	"encoding/json"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/watch"
)

// The ClusterRole grants list and watch, not get, on exactly the resources
// the agent can watch: no more, no less.
func TestClusterRole(t *testing.T) {
	var role rbacv1.ClusterRole
	readManifest(t, "base/clusterrole.yaml", &role, true)
	require.Equal(t, "ClusterRole", role.Kind)

	var got []string
	for i, rule := range role.Rules {
		require.Equal(t, []string{"list", "watch"}, rule.Verbs, "rule %d verbs", i)
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
	cfg, err := config.Load(data, "base/config.yaml")
	require.NoError(t, err)
	require.Empty(t, cfg.Watch.Kubeconfig, "in-cluster")
	require.Equal(t, watch.DefaultResources, cfg.Watch.Resources, "no resources key: the defaults")
}

// Every file the kustomization names exists.
func TestKustomization(t *testing.T) {
	kustomizationFiles(t, "base")
}

// The sharded overlay names only files that exist, runs the agent with
// auto_sharding and the downward API env it needs, and grants no more than
// get, list and watch on the agent's own StatefulSet.
func TestShardedOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "sharded")
	require.Contains(t, k.Resources, "../base")
	for _, f := range []string{"role.yaml", "rolebinding.yaml", "statefulset.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}

	role := readRole(t, "sharded")
	require.Len(t, role.Rules, 1)
	rule := role.Rules[0]
	require.Equal(t, []string{"apps"}, rule.APIGroups)
	require.Equal(t, []string{"statefulsets"}, rule.Resources)
	require.Equal(t, []string{"get", "list", "watch"}, rule.Verbs)
	require.Equal(t, []string{"kube-state-push"}, rule.ResourceNames, "only its own StatefulSet")
	require.Empty(t, rule.NonResourceURLs)

	data, err := os.ReadFile("sharded/config.yaml")
	require.NoError(t, err)
	cfg, err := config.Load(data, "sharded/config.yaml")
	require.NoError(t, err)
	require.True(t, cfg.Watch.AutoSharding)

	requireContainsAll(t, "sharded/statefulset.yaml", append([]string{"value: StatefulSet"}, downwardAPIEnv...)...)

	// With kubectl at hand, the overlay renders to a StatefulSet.
	if out, ok := renderOverlay(t, "sharded"); ok {
		require.Contains(t, out, "kind: StatefulSet")
		require.NotContains(t, out, "kind: Deployment")
		require.Contains(t, out, "replicas: 2")
	}
}

// The HA overlay names only files that exist, runs two replicas with
// leader_election on and the downward API env it needs, and grants get and
// update on the agent's own Lease and create on Leases, nothing more.
func TestHAOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "ha")
	require.Contains(t, k.Resources, "../base")
	for _, g := range k.ConfigMapGenerator {
		require.Equal(t, "replace", g.Behavior)
	}
	for _, f := range []string{"role.yaml", "rolebinding.yaml", "deployment.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}

	role := readRole(t, "ha")
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

	// The Lease the config names is the one the Role grants; its namespace
	// and identity come from the pod's env.
	t.Setenv("POD_NAMESPACE", "kube-state-push")
	t.Setenv("POD_NAME", "kube-state-push-0")
	data, err := os.ReadFile("ha/config.yaml")
	require.NoError(t, err)
	cfg, err := config.Load(data, "ha/config.yaml")
	require.NoError(t, err)
	le := cfg.LeaderElection
	require.True(t, le.Enabled)
	require.Equal(t, role.Rules[0].ResourceNames, []string{le.LeaseName})
	require.Equal(t, "kube-state-push", le.LeaseNamespace)
	require.Equal(t, "kube-state-push-0", le.Identity)

	requireContainsAll(t, "ha/deployment.yaml", append([]string{"value: 2"}, downwardAPIEnv...)...)

	// With kubectl at hand, the overlay renders to a two-replica Deployment.
	if out, ok := renderOverlay(t, "ha"); ok {
		require.Contains(t, out, "kind: Deployment")
		require.Contains(t, out, "replicas: 2")
		require.Contains(t, out, "leader_election:")
	}
}

// The replicated HA overlay runs two replicas that both push, each with
// cluster and __replica__ (its pod name, expanded from the downward API's
// POD_NAME at load time), without leader election or any extra RBAC.
func TestHAReplicasOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "ha-replicas")
	require.Equal(t, []string{"../base"}, k.Resources, "no Role: nothing beyond the base's RBAC")
	for _, g := range k.ConfigMapGenerator {
		require.Equal(t, "replace", g.Behavior)
	}
	for _, f := range []string{"deployment.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}

	t.Setenv("POD_NAME", "kube-state-push-5d8c7b9f6-x2k4q")
	data, err := os.ReadFile("ha-replicas/config.yaml")
	require.NoError(t, err)
	cfg, err := config.Load(data, "ha-replicas/config.yaml")
	require.NoError(t, err)
	require.False(t, cfg.LeaderElection.Enabled, "every replica pushes")
	require.Equal(t, map[string]string{"cluster": "my-cluster", "__replica__": "kube-state-push-5d8c7b9f6-x2k4q"}, cfg.ExternalLabels)

	// Without POD_NAME the label would be empty: refused, naming it.
	t.Setenv("POD_NAME", "")
	_, err = config.Load(data, "ha-replicas/config.yaml")
	require.ErrorContains(t, err, "external_labels.__replica__: value is empty once environment variables are expanded (not set or empty: POD_NAME)")

	requireContainsAll(t, "ha-replicas/deployment.yaml", "value: 2", "name: POD_NAME", "fieldPath: metadata.name")
	if out, ok := renderOverlay(t, "ha-replicas"); ok {
		require.Contains(t, out, "replicas: 2")
		require.Contains(t, out, "__replica__: ${POD_NAME}", "expanded by the agent, not by kustomize")
		require.NotContains(t, out, "kind: Role\n")
	}
}

// The no-secrets overlay watches kube-state-metrics' default resources but
// secrets, and its ClusterRole grants exactly those of the base's but
// secrets: nothing on secrets, in any rule.
func TestNoSecretsOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "no-secrets")
	require.Equal(t, []string{"../base"}, k.Resources)
	for _, f := range []string{"clusterrole.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}
	r := renderKustomization(t, "no-secrets")
	cfg := loadRendered(t, "no-secrets", r)
	var want []string
	for _, name := range watch.DefaultResources {
		if name != "secrets" {
			want = append(want, name)
		}
	}
	require.Equal(t, want, cfg.Watch.Resources)

	granted := func(objects []map[string]any) map[string]bool {
		out := map[string]bool{}
		for _, obj := range objects {
			if obj["kind"] != "ClusterRole" {
				continue
			}
			b, err := json.Marshal(obj)
			require.NoError(t, err)
			var role rbacv1.ClusterRole
			require.NoError(t, json.Unmarshal(b, &role))
			for _, rule := range role.Rules {
				require.Equal(t, []string{"list", "watch"}, rule.Verbs)
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						out[g+"/"+res] = true
					}
				}
			}
		}
		return out
	}
	base, got := granted(renderKustomization(t, "base").objects), granted(r.objects)
	require.True(t, base["/secrets"])
	delete(base, "/secrets")
	require.Equal(t, base, got)
	for _, name := range cfg.Watch.Resources {
		res, ok := watch.Lookup(name)
		require.True(t, ok)
		gr := res.GroupResource()
		require.True(t, got[gr.Group+"/"+gr.Resource], "%s is watched and granted", name)
	}
	if out, ok := renderOverlay(t, "no-secrets"); ok {
		require.NotContains(t, out, "- secrets\n")
	}
}
