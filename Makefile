# kube-state-push. `make demo` runs it locally; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
export GOTOOLCHAIN ?= local
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/kube-state-push/kube-state-push/agent.Version=$(VERSION)
PKGS := ./...

.PHONY: all build tools test test-unit test-e2e fuzz-short vet fmt-check lint tidy-check bench bench-e2e demo docs clean

all: build

build: ## Build bin/kube-state-push.
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kube-state-push ./cmd/kube-state-push

tools: ## Build etcd, kube-apiserver, Prometheus, kube-state-metrics (v2.20, and v1.9.8 for the v1 names), VictoriaMetrics, Thanos, helm (for the chart tests) and a hollow kubelet (tools/kubelet, for the kubelet tests) from the Go module proxy (cached).
	scripts/build-tools.sh

test: tools vet fmt-check fuzz-short ## Every test: unit and end-to-end against the real parts, with -race.
	$(GO) test -race -count=1 -parallel 4 -timeout 30m $(PKGS)

test-unit: ## Unit tests only (no real parts needed).
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /e2e)

test-e2e: tools ## End-to-end tests only.
	$(GO) test -race -count=1 -parallel 4 -timeout 30m -v ./e2e

fuzz-short: ## Each fuzz target for 10s: the config loader, the disk buffer's frame reader, every resource's renderer and the Remote-Write 1.0 encoder.
	GO=$(GO) scripts/fuzz-short.sh ./agent FuzzLoad ./queue/diskbuffer FuzzFrameReader ./watch FuzzRenderers ./encode FuzzAppendWriteRequest

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# golangci-lint is used when installed; vet, gofmt and tidy always run.
lint: vet fmt-check tidy-check
	@if command -v golangci-lint >/dev/null; then golangci-lint run; else echo "golangci-lint not installed: ran vet, gofmt and tidy-check"; fi

tidy-check:
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

bench: ## Micro-benchmarks of the hot paths.
	$(GO) test -run '^$$' -bench . -benchmem ./encode ./agent ./watch ./kubelet

# Not part of `make test`: about 25 minutes at the default scale. BENCH_FLAGS passes flags, e.g.
# make bench-e2e BENCH_FLAGS='-pods 500 -nodes 50 -interval 10s -window 1m -out ""'
bench-e2e: build tools ## kube-state-push side by side with kube-state-metrics + Prometheus agent; writes docs/performance.md.
	$(GO) run ./bench -agent bin/kube-state-push $(BENCH_FLAGS)

demo: tools ## A local control plane with sample objects, Prometheus, and the agent pushing into it.
	$(GO) run ./demo

docs: tools ## Regenerate docs/labels.json (from kube-state-metrics' own output) and docs/metrics.md.
	KSP_UPDATE_LABELS=1 $(GO) test -count=1 -run 'Compat/every' ./e2e
	$(GO) run ./internal/docgen

clean:
	rm -rf bin .demo
