# kube-state-push. `make demo` runs it locally; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
export GOTOOLCHAIN ?= local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/kube-state-push/kube-state-push/agent.Version=$(VERSION)
PKGS := ./...
TOOLS_BIN := .tools/bin
# The unit tests that also run on arm64: all but the ones that start the
# real parts (e2e) and the side-by-side benchmark.
ARM64_PKGS = $$($(GO) list ./... | grep -v -e '/e2e$$' -e '/bench$$')

.PHONY: all build image tools lint-tools test test-unit test-arm64 test-e2e fuzz-short vet fmt-check lint vulncheck tidy-check bench bench-e2e bench-bytes footprint soak demo docs clean

all: build

# Static, like the image (make image, Dockerfile): what the benchmarks measure
# is what ships.
build: ## Build bin/kube-state-push.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kube-state-push ./cmd/kube-state-push

# make image IMAGE=registry.example.com/kube-state-push:v0.1.0. The default
# name is the one the Helm chart renders, made fully qualified.
IMAGE ?=
IMAGE_PLATFORMS := linux/amd64 linux/arm64
# The CA bundle installed in the image; empty: none.
CA_CERTS ?= $(wildcard /etc/ssl/certs/ca-certificates.crt)
image: ## Write bin/kube-state-push-image.tar: an OCI image layout (amd64 and arm64) for `ctr image import` or crane/skopeo, without Docker.
	for p in $(IMAGE_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
	    -o bin/$${p%/*}-$${p#*/}/kube-state-push ./cmd/kube-state-push || exit 1; \
	done
	$(GO) run ./internal/ociimage/mkimage -o bin/kube-state-push-image.tar -image '$(IMAGE)' \
	  -version '$(VERSION)' -ca-certificates '$(CA_CERTS)' \
	  $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=bin/$(subst /,-,$(p))/kube-state-push)

tools: ## Install the Debian packages the tests need where missing (qemu-user-static, containerd, runc, the CNI plugins, iptables); build etcd, kube-apiserver, kubelet, kube-scheduler, kube-controller-manager (for the real-node tests), Prometheus, kube-state-metrics (v2.20, and v1.9.8 for the v1 names), VictoriaMetrics, Thanos, Mimir, helm (for the chart tests), a hollow kubelet (tools/kubelet, for the kubelet tests), golangci-lint and govulncheck from the Go module proxy (cached).
	scripts/install-packages.sh
	scripts/build-tools.sh

lint-tools: ## Build only golangci-lint and govulncheck (tools/lint).
	scripts/build-tools.sh lint

test: tools vet fmt-check lint vulncheck fuzz-short ## Every test: lint, vulncheck, unit and end-to-end against the real parts with -race, and the unit tests on arm64.
	$(GO) test -race -count=1 -parallel 4 -timeout 45m $(PKGS)
	$(MAKE) test-arm64

test-unit: ## Unit tests only (no real parts needed).
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)

# No -race: the race detector does not run under emulation.
test-arm64: ## Unit tests built for arm64, run under qemu-aarch64-static (installed from Debian where missing).
	scripts/install-packages.sh
	GOARCH=arm64 $(GO) test -count=1 -timeout 30m -exec qemu-aarch64-static $(ARM64_PKGS)

test-e2e: tools ## End-to-end tests only.
	$(GO) test -race -count=1 -parallel 4 -timeout 45m -v ./e2e

fuzz-short: ## Each fuzz target for 10s: the config loader, the disk buffer's frame reader, every resource's renderer and the Remote-Write 1.0 encoder.
	GO=$(GO) scripts/fuzz-short.sh ./config FuzzLoad ./queue/diskbuffer FuzzFrameReader ./watch FuzzRenderers ./encode FuzzAppendWriteRequest

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

lint: lint-tools vet fmt-check tidy-check ## golangci-lint with .golangci.yml, vet, gofmt and go mod tidy.
	@test -x $(TOOLS_BIN)/golangci-lint || { echo "$(TOOLS_BIN)/golangci-lint not found: scripts/build-tools.sh lint builds it"; exit 1; }
	$(TOOLS_BIN)/golangci-lint run ./...

# Offline: the database is golang.org/x/vulndb's at the version
# scripts/build-tools.sh pins. Findings only in the standard library (fixed
# by a newer Go) are printed without failing; VULNCHECK_STRICT=1 fails on them.
vulncheck: lint-tools ## Known vulnerabilities the code reaches in its dependencies (govulncheck).
	scripts/vulncheck.sh

tidy-check:
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

bench: ## Micro-benchmarks of the hot paths.
	$(GO) test -run '^$$' -bench . -benchmem ./encode ./agent ./pull ./watch ./kubelet

# Not part of `make test`. BENCH_FLAGS passes flags to both runs, e.g.
# make bench-e2e BENCH_FLAGS='-first both -window 2m' (about 35 and 30 minutes).
# Flags that choose the size run that size alone:
# make bench-e2e BENCH_FLAGS='-pods 500 -nodes 50 -interval 10s -window 1m -out ""'
BENCH_SIZE_FLAGS := $(filter -profile% -pods% -nodes% -namespaces% -containers% -churn%,$(BENCH_FLAGS))
bench-e2e: build tools ## kube-state-push side by side with kube-state-metrics + Prometheus agent or vmagent, at 10,000 pods and at edge size; writes docs/performance.md.
	$(GO) run ./bench -agent bin/kube-state-push $(BENCH_FLAGS)
ifeq ($(BENCH_SIZE_FLAGS),)
	$(GO) run ./bench -agent bin/kube-state-push -profile edge $(BENCH_FLAGS)
endif

# Not part of `make test`: about 10 minutes.
bench-bytes: tools ## Bytes on the wire per protocol and receiver, checked against each receiver's count; rewrites its table in docs/performance.md.
	KSP_WIRE_BYTES=$(CURDIR)/docs/performance.md $(GO) test -count=1 -run '^TestWireBytes$$' -timeout 40m -v ./agent

# make footprint FOOTPRINT_FLAGS='-pods 150 -nodes 3 -window 2m -profiles /tmp/footprint'
footprint: build ## The fixed cost at edge size: peak and steady RSS (anonymous and file-backed), CPU, the runtime's memory, beside kube-state-metrics alone.
	scripts/build-tools.sh kube ksm
	$(GO) run ./bench footprint -agent bin/kube-state-push $(FOOTPRINT_FLAGS)

# make soak SOAK_DURATION=2h SOAK_FLAGS='-interval 2s -pods 5000'
SOAK_DURATION ?= 1h
soak: build ## Run the agent for SOAK_DURATION under churn, an outage and reloads; judge memory, goroutines, descriptors and series; writes docs/soak.md.
	scripts/build-tools.sh kube vm
	$(GO) run ./bench soak -agent bin/kube-state-push -duration $(SOAK_DURATION) $(SOAK_FLAGS)

demo: ## A local control plane with sample objects, Prometheus, and the agent pushing into it.
	scripts/build-tools.sh kube prometheus
	$(GO) run ./demo

docs: tools ## Regenerate docs/labels.json (from kube-state-metrics' own output) and docs/metrics.md.
	KSP_UPDATE_LABELS=1 $(GO) test -count=1 -run 'Compat/every' ./e2e
	$(GO) run ./internal/docgen

clean:
	rm -rf bin .demo
