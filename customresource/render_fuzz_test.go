package customresource

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// FuzzRenderCustomResource renders arbitrary JSON objects with a document
// using every metric type and path feature: never an error or a panic
// (which Render would turn into an error), every series a sorted, unique
// label set with its name.
func FuzzRenderCustomResource(f *testing.F) {
	for _, y := range []string{fooObject, benchObject} {
		u := object(f, y)
		b, err := u.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"status": {"conditions": {"a": 1}, "nodes": "x", "sub": [1, 2]}, "spec": {"resources": [null], "labels": {"": "e"}}}`))
	f.Add([]byte(`{"metadata": {"labels": {"Upper": "x", "": "y", "a-b": "z"}}, "spec": {"version": 1.5e300, "resources": {"cpu": {"x": 1}}}}`))
	c := load(f, benchDocument)
	rs, _ := c.Resolve([]Served{{GVK: GroupVersionKind{Group: "crs.example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets", Namespaced: true}})
	rr := rs[0].NewRenderer(watch.RenderOptions{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetUID("fuzz")
		_, set, err := rr.Render(u)
		if err != nil {
			t.Fatalf("render: %v", err)
		}
		for i := range set.Len() {
			ls, err := encode.DecodeLabels(set.Labels(i))
			if err != nil {
				t.Fatal(err)
			}
			named := false
			for _, l := range ls {
				named = named || l.Name == encode.MetricName
			}
			if !named {
				t.Fatalf("series %d: no name: %v", i, ls)
			}
			for j := 1; j < len(ls); j++ {
				if ls[j-1].Name >= ls[j].Name || ls[j].Value == "" {
					t.Fatalf("series %d: labels not sorted, unique and non-empty: %v", i, ls)
				}
			}
		}
	})
}
