package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func validated(t *testing.T, c Config) *Config {
	t.Helper()
	c.Resources = []string{"pods", "nodes", "configmaps"}
	require.NoError(t, c.Validate())
	return &c
}

func TestSelected(t *testing.T) {
	info := FamilyInfo{Name: "kube_pod_info"}
	labels := FamilyInfo{Name: "kube_pod_labels"}
	optIn := FamilyInfo{Name: "kube_pod_nodeselectors", OptIn: true}
	cases := []struct {
		name string
		cfg  Config
		want map[string]bool
	}{
		{"defaults: everything but opt-in", Config{},
			map[string]bool{"kube_pod_info": true, "kube_pod_labels": true, "kube_pod_nodeselectors": false}},
		{"allowlist, unanchored like kube-state-metrics", Config{MetricAllowlist: []string{"pod_info"}},
			map[string]bool{"kube_pod_info": true, "kube_pod_labels": false, "kube_pod_nodeselectors": false}},
		{"denylist regex", Config{MetricDenylist: []string{"^kube_pod_la.*"}},
			map[string]bool{"kube_pod_info": true, "kube_pod_labels": false, "kube_pod_nodeselectors": false}},
		{"opt-in", Config{MetricOptInList: []string{"kube_pod_nodeselectors"}},
			map[string]bool{"kube_pod_info": true, "kube_pod_labels": true, "kube_pod_nodeselectors": true}},
		{"opt-in still filtered by the allowlist", Config{MetricOptInList: []string{"kube_pod_nodeselectors"}, MetricAllowlist: []string{"kube_pod_info"}},
			map[string]bool{"kube_pod_info": true, "kube_pod_labels": false, "kube_pod_nodeselectors": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := validated(t, c.cfg)
			for _, f := range []FamilyInfo{info, labels, optIn} {
				require.Equal(t, c.want[f.Name], cfg.Selected(f), f.Name)
			}
		})
	}
}

func TestFamilyOptionsWildcardResource(t *testing.T) {
	cfg := validated(t, Config{
		MetricLabelsAllowlist:      map[string][]string{"pods": {"app"}, "nodes": {"zone"}},
		MetricAnnotationsAllowlist: map[string][]string{"*": {"*"}, "pods": {"x"}},
	})
	require.Equal(t, FamilyOptions{LabelsAllowlist: []string{"app"}, AnnotationsAllowlist: []string{"*"}}, cfg.FamilyOptions("pods"))
	require.Equal(t, FamilyOptions{AnnotationsAllowlist: []string{"*"}}, cfg.FamilyOptions("configmaps"))
}

func TestScopes(t *testing.T) {
	pods, _ := Lookup("pods")
	nodes, _ := Lookup("nodes")
	cases := []struct {
		name       string
		cfg        Config
		pods, node []Scope
	}{
		{"all namespaces", Config{}, []Scope{{}}, []Scope{{}}},
		{"denylist as a field selector", Config{NamespacesDenylist: []string{"kube-system", "test"}},
			[]Scope{{FieldSelector: "metadata.namespace!=kube-system,metadata.namespace!=test"}}, []Scope{{}}},
		{"one watch per namespace, less the denylist", Config{Namespaces: []string{"a", "b", "c"}, NamespacesDenylist: []string{"b"}},
			[]Scope{{Namespace: "a"}, {Namespace: "c"}}, []Scope{{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := validated(t, c.cfg)
			require.Equal(t, c.pods, cfg.Scopes(pods))
			require.Equal(t, c.node, cfg.Scopes(nodes))
		})
	}
}

// A filtered-out family is not rendered at all: it costs nothing per
// event or per tick.
func TestFilteredFamilyNotRendered(t *testing.T) {
	cfg := validated(t, Config{MetricAllowlist: []string{"^kube_configmap_info$"}})
	r, _ := Lookup("configmaps")
	rr := r.NewRenderer(RenderOptions{Select: cfg.Selected})
	cm := configMapForTest()
	_, set, err := rr.Render(cm)
	require.NoError(t, err)
	requireGolden(t, `kube_configmap_info{configmap="settings",namespace="prod"} 1`, seriesText(t, &set))
}
