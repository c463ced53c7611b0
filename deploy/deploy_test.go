// Package deploy_test checks the Kubernetes manifests in deploy/base against
// the code: the ClusterRole grants exactly what the agent watches, read-only,
// and the example configuration loads.
package deploy_test

import (
	"os"
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
