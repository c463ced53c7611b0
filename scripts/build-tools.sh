#!/usr/bin/env bash
# Builds the real programs the end-to-end tests run (kube-apiserver, etcd,
# kubelet, kube-scheduler, kube-controller-manager, Prometheus,
# kube-state-metrics, VictoriaMetrics and vmagent, Thanos, Mimir, helm, a
# hollow kubelet) and the linters (golangci-lint, govulncheck and its vulnerability
# database) from the Go module proxy, through the tools modules under
# tools/. Each module's binaries are cached in a folder keyed by the hash of
# its go.mod and go.sum (and the Go version), so a second run only links
# .tools/bin to the cached folder. Safe to run again: nothing is rebuilt when
# the key has not changed.
#
#   scripts/build-tools.sh [kube|kubelet|prometheus|ksm|ksm1|vm|thanos|mimir|helm|lint ...]   (default: all)
#
# KSP_TOOLS_CACHE overrides the cache root (default ~/.cache/kube-state-push/tools).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${KSP_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-state-push/tools}"
bin="$root/.tools/bin"
mkdir -p "$bin" "$cache"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

k8s_version=v1.37.2

key() { # key MODULE_DIR -> hash of what decides the build
	cat "$1/go.mod" "$1/go.sum" $(find "$1" -name '*.go' | sort) <(go version) <(sed -n '/^build_'"$(basename "$1")"'()/,/^}/p' "$0") | sha256sum | cut -c1-16
}

build_kube() {
	local out=$1 ldflags
	# kube-apiserver and etcd, and kubelet, kube-scheduler and
	# kube-controller-manager for the real-node tests (internal/testenv's
	# Node), in one static build so that the five share their compiled
	# packages. Without cgo the kubelet still runs containers through
	# containerd.
	ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version}"
	ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
}

build_prometheus() {
	local out=$1
	# remove_all_sd leaves service discovery out: the receiver needs none, and
	# it cuts the build from ~14 to ~4 minutes.
	go build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$out/prometheus" github.com/prometheus/prometheus/cmd/prometheus
}

build_ksm() {
	local out=$1
	# Static, as its release image (distroless/static) ships it.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/kube-state-metrics" k8s.io/kube-state-metrics/v2
}

build_ksm1() {
	local out=$1
	# kube-state-metrics v1.9.8, for the legacy_v1_families compatibility test.
	go build -trimpath -ldflags "-s -w" -o "$out/kube-state-metrics-v1.9.8" k8s.io/kube-state-metrics
}

build_vm() {
	local out=$1
	go build -trimpath -ldflags "-s -w" -o "$out/victoria-metrics" github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics
	# vmagent, the third side of the benchmark: from the same module, so its
	# version is VictoriaMetrics'.
	go build -trimpath -ldflags "-s -w" -o "$out/vmagent" github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent
}

build_thanos() {
	local out=$1
	# slicelabels: Thanos receive panics on its first write without it.
	go build -trimpath -tags netgo,slicelabels -ldflags "-s -w" -o "$out/thanos" github.com/thanos-io/thanos/cmd/thanos
}

build_mimir() {
	local out=$1
	# The tags and the static link are those of Mimir's own Makefile. The
	# pseudo-version is main after the release VERSION names.
	CGO_ENABLED=0 go build -trimpath -tags netgo,stringlabels \
		-ldflags "-s -w -X github.com/grafana/mimir/pkg/util/version.Version=$(go list -m -f '{{.Version}}' github.com/grafana/mimir)" \
		-o "$out/mimir" github.com/grafana/mimir/cmd/mimir
}

build_kubelet() {
	local out=$1
	# hollow-kubelet: k8s.io/kubernetes' hollow kubelet (kubemark's
	# --morph=kubelet code) with a synthetic cAdvisor; a program of ours, so
	# its sources are part of the key.
	go build -trimpath -ldflags "-s -w" -o "$out/hollow-kubelet" .
}

build_helm() {
	local out=$1
	# helm v4, for the chart's lint, template and config tests. The version
	# is stamped as helm's own release does, or it reports v4.3.
	go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v4.3.1" -o "$out/helm" helm.sh/helm/v4/cmd/helm
}

build_lint() {
	local out=$1 db
	# golangci-lint stamps its version as its release does; the tools
	# module's go.mod pins it.
	go build -trimpath -ldflags "-s -w -X main.version=$(go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)" \
		-o "$out/golangci-lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	go build -trimpath -ldflags "-s -w" -o "$out/govulncheck" golang.org/x/vuln/cmd/govulncheck
	# govulncheck's database, for make vulncheck: the OSV entries of
	# golang.org/x/vulndb at this version, a flat folder that govulncheck
	# -db file://... indexes itself. Bump the version to refresh it.
	db=$(cd / && GOFLAGS= go mod download -json golang.org/x/vulndb@v0.0.0-20261105234957-e22db6528018 | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[ -d "$db/data/osv" ] || { echo "build-tools: no data/osv in golang.org/x/vulndb" >&2; return 1; }
	mkdir -p "$out/vulndb"
	cp "$db"/data/osv/*.json "$out/vulndb/"
}

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(kube kubelet prometheus ksm ksm1 vm thanos mimir helm lint)

for m in "${modules[@]}"; do
	dir="$root/tools/$m"
	[ -f "$dir/go.mod" ] || { echo "build-tools: no tools module $dir" >&2; exit 2; }
	k="$(key "$dir")"
	dest="$cache/$m-$k"
	if [ ! -f "$dest/.done" ]; then
		echo "build-tools: building $m into $dest (a cold build takes minutes)" >&2
		start=$(date +%s)
		tmp="$dest.tmp.$$"
		rm -rf "$tmp" && mkdir -p "$tmp"
		(cd "$dir" && "build_$m" "$tmp")
		touch "$tmp/.done"
		rm -rf "$dest" && mv "$tmp" "$dest"
		echo "build-tools: $m built in $(( $(date +%s) - start ))s" >&2
	fi
	for f in "$dest"/*; do
		ln -sfn "$f" "$bin/$(basename "$f")"
	done
done
echo "$bin"
