package watch

import "sort"

// All returns every resource the agent can watch, sorted by name.
func All() []*Resource {
	rs := []*Resource{
		nodeResource(),
		podResource(),
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// DefaultResources are watched when the configuration names none.
var DefaultResources = []string{"nodes", "pods"}

// Lookup returns the resource with the given name.
func Lookup(name string) (*Resource, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// Names returns the names of every resource the agent can watch.
func Names() []string {
	var ns []string
	for _, r := range All() {
		ns = append(ns, r.Name)
	}
	return ns
}
