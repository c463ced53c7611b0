package deploy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The custom-resources overlay grants what its custom_resource_state needs
// on top of the base: list and watch on CRDs (the agent's discovery), and
// list and watch on every configured kind (by its default plural, the
// lower-case kind plus "s", as kubebuilder and kube-state-metrics derive
// it), and nothing else.
func TestCustomResourcesOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "custom-resources")
	require.Equal(t, []string{"../base"}, k.Resources)
	for _, f := range []string{"clusterrole.yaml", "config.yaml"} {
		require.Contains(t, files, f)
	}
	r := renderKustomization(t, "custom-resources")
	cfg := loadRendered(t, "custom-resources", r)
	require.NotNil(t, cfg.CustomResourceState)
	require.NotEmpty(t, cfg.CustomResourceState.Doc.Spec.Resources)

	want := verbsGranted(t, renderKustomization(t, "base"))
	want["customresourcedefinitions.apiextensions.k8s.io"] = "list,watch"
	for _, res := range cfg.CustomResourceState.Doc.Spec.Resources {
		gvk := res.GroupVersionKind
		want[strings.ToLower(gvk.Kind)+"s."+gvk.Group] = "list,watch"
	}
	require.Equal(t, want, verbsGranted(t, r))
}

// verbsGranted maps each group resource the ClusterRoles grant to its
// verbs.
func verbsGranted(t *testing.T, r rendered) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rs := range rules(t, r, "ClusterRole") {
		for _, rule := range rs {
			require.Empty(t, rule.ResourceNames)
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					out[schema.GroupResource{Group: g, Resource: res}.String()] = strings.Join(rule.Verbs, ",")
				}
			}
		}
	}
	return out
}
