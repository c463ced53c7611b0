package pull

import (
	"compress/gzip"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sets is a series map of objects rendered once.
type sets []*encode.SeriesSet

func (s sets) AppendSets(dst []*encode.SeriesSet) []*encode.SeriesSet { return append(dst, s...) }

// render renders objects of a resource as the agent's series map does,
// with the external labels.
func render(tb testing.TB, resource string, external []encode.Label, objs ...any) sets {
	tb.Helper()
	r, ok := watch.Lookup(resource)
	require.True(tb, ok)
	rr := r.NewRenderer(watch.RenderOptions{ExternalLabels: external})
	out := make(sets, 0, len(objs))
	for _, o := range objs {
		_, set, err := rr.Render(o)
		require.NoError(tb, err)
		out = append(out, &set)
	}
	return out
}

// defaultFamilies returns the families of a resource that are not opt-in.
func defaultFamilies(tb testing.TB, resource string) []watch.FamilyInfo {
	tb.Helper()
	r, ok := watch.Lookup(resource)
	require.True(tb, ok)
	var fams []watch.FamilyInfo
	for _, f := range r.Families(watch.FamilyOptions{}) {
		if !f.OptIn {
			fams = append(fams, f)
		}
	}
	return fams
}

// pullFixture is a pull handler over the nodes resource, with the given
// nodes stored.
func pullFixture(t *testing.T, ext map[string]string, nodes ...*v1.Node) *Handler {
	t.Helper()
	var extLabels []encode.Label
	for _, k := range slices.Sorted(maps.Keys(ext)) {
		extLabels = append(extLabels, encode.Label{Name: k, Value: ext[k]})
	}
	objs := make([]any, len(nodes))
	for i, n := range nodes {
		objs[i] = n
	}
	v := &View{Groups: []Group{{Resource: "nodes", Families: defaultFamilies(t, "nodes"), Maps: []Source{render(t, "nodes", extLabels, objs...)}}}, External: extLabels}
	return NewHandler(func() *View { return v }, DefaultConfig.MaxConcurrentScrapes, prometheus.NewRegistry())
}

func scrapePull(t *testing.T, h http.Handler, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		body = gz
	}
	b, err := io.ReadAll(body)
	require.NoError(t, err)
	return resp, string(b)
}

func pullNode(name string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Spec:       v1.NodeSpec{ProviderID: "kind://" + name},
		Status: v1.NodeStatus{
			Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

func TestPullWritesNothingForAResourceWithoutObjects(t *testing.T) {
	h := pullFixture(t, nil)
	resp, body := scrapePull(t, h, "/metrics", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body, "kube-state-metrics writes no HELP or TYPE for a resource without objects")
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4"), resp.Header.Get("Content-Type"))
}

func TestPullWritesEveryFamilyOfAResourceWithObjects(t *testing.T) {
	h := pullFixture(t, map[string]string{"cluster": "edge-1"}, pullNode("n1"), pullNode("n2"))
	_, body := scrapePull(t, h, "/metrics", nil)
	r, _ := watch.Lookup("nodes")
	for _, f := range r.Families(watch.FamilyOptions{}) {
		if f.OptIn {
			continue
		}
		// Every family's header, with or without series, exactly once.
		require.Equal(t, 1, strings.Count(body, "# HELP "+f.Name+" "), f.Name)
		require.Equal(t, 1, strings.Count(body, "# TYPE "+f.Name+" "), f.Name)
	}
	require.Contains(t, body, "# HELP kube_node_info [STABLE] Information about a cluster node.\n# TYPE kube_node_info gauge\n")
	require.Contains(t, body, `kube_node_status_capacity{node="n1",resource="cpu",unit="core"} 4`+"\n")
	require.Contains(t, body, `kube_node_status_condition{node="n2",condition="Ready",status="true"} 1`+"\n")
	require.NotContains(t, body, "edge-1", "external labels are for pushing, not for the kube-state-metrics page")
	for line := range strings.SplitSeq(strings.TrimSuffix(body, "\n"), "\n") {
		require.NotEmpty(t, line)
	}
}

func TestPullNegotiatesFiltersAndCompresses(t *testing.T) {
	h := pullFixture(t, nil, pullNode("n1"))
	_, plain := scrapePull(t, h, "/metrics", nil)

	resp, om := scrapePull(t, h, "/metrics", map[string]string{"Accept": "application/openmetrics-text;version=1.0.0"})
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text; version=1.0.0"), resp.Header.Get("Content-Type"))
	require.Equal(t, plain+"# EOF\n", om)

	resp, zipped := scrapePull(t, h, "/metrics", map[string]string{"Accept-Encoding": "deflate, gzip;q=0.9"})
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	require.Equal(t, plain, zipped)

	_, only := scrapePull(t, h, "/metrics?resources=pods", nil)
	require.Empty(t, only)
	_, except := scrapePull(t, h, "/metrics?exclude_resources=pods,secrets", nil)
	require.Equal(t, plain, except)
	_, excluded := scrapePull(t, h, "/metrics?exclude_resources=nodes", nil)
	require.Empty(t, excluded)
}

func TestPullHeaderTypes(t *testing.T) {
	f := watch.FamilyInfo{Name: "x_info", Help: "A \\ help\nline.", Type: watch.Info, Stability: watch.Stable}
	require.Equal(t, "# HELP x_info [STABLE] A \\\\ help\\nline.\n# TYPE x_info gauge\n", string(appendHeader(nil, f, false)))
	require.Equal(t, "# HELP x_info [STABLE] A \\\\ help\\nline.\n# TYPE x_info info\n", string(appendHeader(nil, f, true)))
	f.Type, f.Stability = watch.StateSet, watch.Alpha
	require.Equal(t, "# HELP x_info A \\\\ help\\nline.\n# TYPE x_info gauge\n", string(appendHeader(nil, f, false)))
}
