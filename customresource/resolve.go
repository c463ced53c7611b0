package customresource

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kube-state-push/kube-state-push/watch"
)

// Resolve returns the custom resources to watch, given the kinds served
// now, and the configured kinds no CRD serves. A version or kind "" or
// "*" stands for every one served in the group, as in kube-state-metrics
// (internal/discovery ResolveGVKToGVKPs). When two entries resolve to the
// same resource, the last one renders it, as kube-state-metrics replaces
// the earlier store. Call it after Validate.
func (c *Config) Resolve(served []Served) (rs []*watch.Resource, missing []GroupVersionKind) {
	at := map[string]int{}
	for _, cr := range c.compiled {
		want := cr.res.GroupVersionKind
		found := false
		for _, s := range served {
			if !matches(want, s.GVK) {
				continue
			}
			found = true
			r := cr.resource(s, c.countErrors)
			if i, ok := at[r.Name]; ok {
				rs[i] = r
				continue
			}
			at[r.Name] = len(rs)
			rs = append(rs, r)
		}
		if !found {
			missing = append(missing, want)
		}
	}
	return rs, missing
}

// CountErrors makes the resources Resolve returns from now on call count
// with the number of values of an object that did not render
// (kube-state-metrics logs each: a value that is not a number, a state
// that is not a string, a path that resolves to nothing without
// nilIsZero). count is called from the reflectors' goroutines.
func (c *Config) CountErrors(count func(resource string, n int)) { c.countErrors = count }

// matches reports whether a configured kind selects a served one.
func matches(want, got GroupVersionKind) bool {
	wild := func(s string) bool { return s == "" || s == "*" }
	return want.Group == got.Group &&
		(wild(want.Version) || want.Version == got.Version) &&
		(wild(want.Kind) || want.Kind == got.Kind)
}

// ResourceName is the name of a served kind's resource in logs and
// self-metrics: group/version/plural.
func ResourceName(s Served) string { return s.GVK.Group + "/" + s.GVK.Version + "/" + s.Plural }

// resource returns the watched resource of one served kind.
func (c *compiledResource) resource(s Served, count func(resource string, n int)) *watch.Resource {
	// The definition: the resource's configuration and what it resolved
	// to, so that a reload that changes either rebuilds the watch.
	def, err := yaml.Marshal(struct {
		Resource *Resource
		Served   Served
	}{c.res, s})
	if err != nil {
		panic("customresource: marshalling a resource: " + err.Error())
	}
	return watch.NewCustomResource(watch.CustomResource{
		Name:          ResourceName(s),
		GVR:           schema.GroupVersionResource{Group: s.GVK.Group, Version: s.GVK.Version, Resource: s.Plural},
		Kind:          s.GVK.Kind,
		Namespaced:    s.Namespaced,
		LabelSelector: c.res.LabelSelector,
		Definition:    string(def),
		Families: func() []watch.Family[*unstructured.Unstructured] {
			var onErrors func(int)
			if count != nil {
				name := ResourceName(s)
				onErrors = func(n int) { count(name, n) }
			}
			return watchFamilies(c.forGVK(s.GVK), onErrors)
		},
	})
}
