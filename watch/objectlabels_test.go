package watch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kube-state-push/kube-state-push/encode"
)

// series_labels_from_object puts the named labels on every series of the
// object, named as kube_pod_labels names them, adds no series, and leaves
// kube_pod_labels with each label once.
func TestSeriesLabelsFromObject(t *testing.T) {
	r, ok := Lookup("pods")
	require.True(t, ok)
	pod := testPod("ns", "p", "uid-1", func(p *v1.Pod) {
		p.Labels = map[string]string{"team": "blue", "app.kubernetes.io/name": "shop", "Team": "upper", "other": "x"}
		p.Status.Phase = v1.PodRunning
	})
	plain := r.NewRenderer(RenderOptions{Families: FamilyOptions{LabelsAllowlist: []string{"team", "Team"}}})
	_, without, err := plain.Render(pod)
	require.NoError(t, err)
	opts := FamilyOptions{LabelsAllowlist: []string{"team", "Team"}, SeriesLabels: []string{"app.kubernetes.io/name", "team", "Team", "missing"}}
	rr := r.NewRenderer(RenderOptions{Families: opts})
	_, with, err := rr.Render(pod)
	require.NoError(t, err)
	require.Equal(t, without.Len(), with.Len(), "no extra series")

	// team and Team both sanitise to label_team: conflict suffixes, as
	// kube_pod_labels gives them.
	want := map[string]string{"label_app_kubernetes_io_name": "shop", "label_team_conflict1": "upper", "label_team_conflict2": "blue"}
	for i := range with.Refs {
		ls, err := encode.DecodeLabels(with.Labels(i))
		require.NoError(t, err)
		got := map[string]string{}
		names := map[string]int{}
		for _, l := range ls {
			names[l.Name]++
			if strings.HasPrefix(l.Name, "label_") {
				got[l.Name] = l.Value
			}
		}
		for n, c := range names {
			require.Equal(t, 1, c, "label %s once", n)
		}
		require.Equal(t, want, got, "series %d", i)
	}
	lines := text(&with)
	for _, l := range lines {
		require.Contains(t, l, `label_app_kubernetes_io_name="shop"`)
		if strings.HasPrefix(l, "kube_pod_labels{") {
			require.Equal(t, 1, strings.Count(l, "label_team_conflict2="), l)
		}
	}

	// An object without the labels renders as without the option.
	bare := testPod("ns", "q", "uid-2", nil)
	_, a, err := plain.Render(bare)
	require.NoError(t, err)
	_, b, err := rr.Render(bare)
	require.NoError(t, err)
	require.Equal(t, seriesText(t, &a), seriesText(t, &b))
}

func TestSeriesLabelsFromObjectConfig(t *testing.T) {
	c := Config{SeriesLabelsFromObject: map[string][]string{"pods": {"team", "app*", "team", ""}, "widgets": {"x"}}}
	err := c.Validate()
	require.Error(t, err)
	for _, msg := range []string{
		`series_labels_from_object.pods[1]: "app*": name each label key, without wildcards`,
		`series_labels_from_object.pods[2]: label key "team" is listed twice`,
		`series_labels_from_object.pods[3]: is empty`,
		`series_labels_from_object.widgets: unknown resource "widgets"`,
	} {
		require.ErrorContains(t, err, msg)
	}
	c = Config{SeriesLabelsFromObject: map[string][]string{"pods": {"team"}, "namespaces": {"team"}}}
	require.NoError(t, c.Validate())
	require.Equal(t, []string{"team"}, c.FamilyOptions("pods").SeriesLabels)
	require.Empty(t, c.FamilyOptions("nodes").SeriesLabels)
}

// Objects with and without the labels share the family's text layout: no
// series needs an exposition trailer, and the text shows the labels after
// the others.
func TestSeriesLabelsFromObjectLayout(t *testing.T) {
	set := &encode.SeriesSet{}
	e := &Emitter{out: set}
	keys := []string{"team", "app"}
	e.Identity("namespace", "ns", "pod", "a")
	e.objectLabels(map[string]string{"team": "blue", "app": "shop"}, keys)
	e.startFamily(0, "test_object_labels_info", 0)
	e.Emit(1, "node", "n1")
	e.Identity("namespace", "ns", "pod", "b")
	e.objectLabels(map[string]string{"other": "x"}, keys)
	e.startFamily(0, "test_object_labels_info", 0)
	e.Emit(1, "node", "n2")
	e.endFamilies()
	require.Nil(t, set.Trailer(0))
	require.Nil(t, set.Trailer(1))
	require.Equal(t, []string{
		`test_object_labels_info{namespace="ns",pod="a",node="n1",label_app="shop",label_team="blue"} 1` + "\n",
		`test_object_labels_info{namespace="ns",pod="b",node="n2"} 1` + "\n",
	}, text(set))
}
