# One obvious way to run things. Every target is plain go commands.
GO ?= go

.PHONY: test lint race bench demo demo-soak build sandbox-assets helm

## test: everything CI runs: lint, all tests, the plain-Go (purego) scanner
## path, the race detector on the server and migrate packages, and the demo exactly as
## the README runs it. The sandbox's binaries are built first, outside any
## test's timeout. test/e2e (the API server's tests, the longest) is named
## first so that it starts first and the unit packages run beside it.
## internal/sandboxcmd next: its fresh-machine demo test idles about 22 s
## on purpose (a build that outlasts the start deadline), which then
## overlaps busy packages instead of ending the run.
## -parallel 8: e2e's parallel tests (HA, the migrations, the real CRDs,
## doctor's broken setups) wait much of their time on drains, timeouts and
## the API server; with 4 slots the real CRDs' examples waited 2 minutes
## for one behind doctor's setups. Measured on two loaded cores: e2e
## 195 s with -parallel 4, 119 s with 8, 124 s with 12.
## CGO_ENABLED=0 and -trimpath, for this target and those it runs first:
## the release binaries (the webhook image, kube-apiserver, etcd) are built
## so, and one setting for every build lets each compiled package serve
## them all (vet, the sandbox's binaries, helm, the tests and the binaries
## they build); a package built with cgo and without, or with -trimpath and
## without, is compiled twice. -trimpath also keeps hubspoke's own packages
## cached across checkouts in different directories. The race detector
## needs cgo, and compiles its own instrumented copy anyway.
test: export CGO_ENABLED = 0
test: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
test: lint sandbox-assets helm
	$(GO) test -timeout 30m -parallel 8 ./test/e2e ./internal/sandboxcmd ./...
	$(GO) test -tags purego ./internal/stopbits/ ./convert/
	CGO_ENABLED=1 $(GO) test -race ./review/... ./server/... ./migrate/...
	$(GO) run ./cmd/hubspoke demo

## lint: gofmt and go vet must be clean.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## race: the race detector on the server packages and migrate (its
## workers share counts and the checkpoint).
race:
	$(GO) test -race ./review/... ./server/... ./migrate/...

## bench: every benchmark, hubspoke and controller-runtime in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/ ./convert/ ./check/

## sandbox-assets: build kube-apiserver and etcd for the sandbox (once per
## version; several minutes from an empty build cache) and print their
## directory.
sandbox-assets:
	$(GO) run ./cmd/hubspoke sandbox assets

## helm: build the helm binary test/e2e renders charts/hubspoke with (once;
## from its own module, internal/helmbin) and print its path.
helm:
	$(GO) run ./internal/helmbin/build

## demo: the README's main job.
demo:
	$(GO) run ./cmd/hubspoke demo

## demo-soak: the demo RUNS times in a row (default 50), counting the
## runs that fail; logs in $(SOAK_DIR). A run whose checks passed must
## never fail in stopping.
RUNS ?= 50
SOAK_DIR ?= $(or $(TMPDIR),/tmp)/hubspoke-demo-soak
demo-soak: sandbox-assets
	mkdir -p $(SOAK_DIR)
	$(GO) build -o $(SOAK_DIR)/hubspoke ./cmd/hubspoke
	@failed=0; for i in $$(seq $(RUNS)); do \
		if ! $(SOAK_DIR)/hubspoke demo >$(SOAK_DIR)/run-$$i.log 2>&1; then \
			failed=$$((failed+1)); echo "run $$i failed: $$(tail -n 1 $(SOAK_DIR)/run-$$i.log)"; \
		fi; \
	done; echo "demo-soak: $$failed of $(RUNS) runs failed (logs in $(SOAK_DIR))"; test $$failed -eq 0

## build: the full CLI and the slim webhook binary.
build:
	$(GO) build -o bin/hubspoke ./cmd/hubspoke
	$(GO) build -trimpath -ldflags=-s -o bin/hubspoke-webhook ./cmd/hubspoke-webhook
