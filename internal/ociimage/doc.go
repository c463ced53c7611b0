// Package ociimage writes the agent's container image without a Docker
// daemon or a registry: an OCI image layout, as one tar stream, holding a
// multi-arch index with one image per platform.
//
// Each image has the contents the Dockerfile gives (a static binary, user
// 65532, the distroless passwd and group entries, and optionally a CA
// bundle) in one layer, with fixed timestamps, so the same binaries always
// give the same digests. The layout's index.json names the image with the
// annotations containerd reads, so `ctr -n k8s.io image import FILE` makes it
// available to a kubelet under the name the manifests render.
//
// Only `make image` and the tests use this package; the agent never imports
// it.
package ociimage
