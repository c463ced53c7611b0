package ociimage

import "strings"

// Normalize turns a short image reference into the fully qualified one a
// kubelet asks containerd for, as Docker's reference rules do: a name with
// no registry is on docker.io, a single-component repository there is under
// library/, and a missing tag is "latest".
func Normalize(ref string) string {
	domain, path, found := strings.Cut(ref, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, path = "docker.io", ref
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	last := path[strings.LastIndex(path, "/")+1:]
	if !strings.ContainsAny(last, ":@") {
		path += ":latest"
	}
	return domain + "/" + path
}
