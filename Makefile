# skillgate: `make help` lists the targets.

GO        ?= go
BIN       := bin/skillgate
FUZZTIME  ?= 3s
BENCHTIME ?= 1s
BENCH_ARGS ?= --quick
# bench/ is a module of its own, so that the peer libraries it compares
# against never become dependencies of the gateway.
BENCHMOD  := cd bench && GOWORK=off
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
RUN_ARGS  ?=
# Mutation testing (make mutation PKG=./session): one package at a time, its
# own tests only. Two workers suit a 2-core machine. gremlins gives each
# mutant's run the time of its coverage run times the coefficient: -count=1
# keeps that run from being a near-zero cache hit (every mutant would time
# out), and 5 ends a mutant that hangs in minutes rather than an hour while
# leaving room for a loaded machine. Files in subdirectories are left out:
# each package is judged by its own tests.
PKG               ?= ./session
MUTATION_WORKERS  ?= 2
MUTATION_TIMEOUT  ?= 5
MUTATION_DIR      := .mutation
# More gremlins flags, e.g. MUTATION_ARGS="-E '^(budget|server)\.go'" to
# leave files out (--exclude-files is matched against the path under PKG).
MUTATION_ARGS     ?=
MUTATION_REPORT    = $(MUTATION_DIR)/$(subst /,_,$(patsubst ./%,%,$(PKG))).json
# make mutation-recheck re-runs only the mutants of that report with these
# statuses (comma-separated: LIVED, TIMED OUT, NOT COVERED; KILLED and a dry
# run's RUNNABLE to judge them all for real), RECHECK_WORKERS at a time,
# each bounded by RECHECK_TIMEOUT; RECHECK_ARGS passes more flags (-files,
# -test-pkg, -run, -v, -o).
RECHECK_STATUS    ?= LIVED
RECHECK_TIMEOUT   ?= 3m
RECHECK_WORKERS   ?= 1
RECHECK_ARGS      ?=
# go test -json through internal/skipcheck: go test's usual output, then
# the skipped tests; with SKILLGATE_REQUIRE_NO_SKIPS=1 (CI) a skip that
# .ci/allowed-skips does not list for that stage (-stage) fails.
# .ci/test-rootless runs its tests the same way (-stage rootless).
SKIPCHECK := $(CURDIR)/bin/skipcheck -allowed $(CURDIR)/.ci/allowed-skips
# The sandbox's isolation, abuse and leakage suites, which make test-scratch
# runs again on the from-scratch path (the unit stage forces the template).
SCRATCH_TESTS := ^(TestIsolation.*|TestAbuse.*|TestRunProcessesKeepDefaultSignals|TestParallelRunsAreIsolated|TestUserCodeCannotClaimReservedTypes|TestSeccompUnlistedCallsInARun|TestRunsHaveTheirOwnUserCounts|TestEgressNoNetworkWithoutEgress)$$

.DEFAULT_GOAL := help
.PHONY: help build run test setup lint vet fmt-check staticcheck unit skipcheck test-scratch soak test-rootless fuzz bench bench-rootless docs clean mutation mutation-recheck

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/skillgate
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/skillgate

run: build ## Run the gateway with the example skills (framed :7400, HTTP :8080, metrics :9400)
	$(BIN) serve --log-format console --skills-dir examples/skills --data-dir .data $(RUN_ARGS)

test: setup lint unit test-scratch test-rootless test-cgroup2 fuzz test-clients test-mcp-conformance ## Lint, race-enabled tests (the sandbox suites on both paths; as root: again as an unprivileged user, and in a cgroup v2 VM), a few seconds of every fuzz target, the client suites, MCP conformance

setup: ## Install what the tests need when missing (Debian packages, MinIO, HAProxy; as root)
	./.ci/setup

lint: fmt-check vet staticcheck ## gofmt, go vet and staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(BENCHMOD) $(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...
	$(GO) build -o bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	$(BENCHMOD) ../bin/staticcheck ./...

unit: skipcheck ## go test -race ./... (the gateway and the bench module)
	$(SKIPCHECK) -stage unit -- $(GO) test -race -count=1 -json -timeout 30m ./...
	$(BENCHMOD) $(SKIPCHECK) -stage unit -- $(GO) test -race -count=1 -json -timeout 10m ./...

skipcheck:
	$(GO) build -o bin/skipcheck ./internal/skipcheck

test-scratch: skipcheck ## The sandbox's isolation, abuse and leakage suites again with sandboxes started from scratch (SKILLGATE_SANDBOX_TEMPLATE=off)
	SKILLGATE_SANDBOX_TEMPLATE=off $(SKIPCHECK) -stage scratch -- $(GO) test -race -count=1 -json -timeout 20m -run '$(SCRATCH_TESTS)' ./sandbox

.PHONY: test-clients test-python
test-clients: test-python test-typescript ## The Python and TypeScript clients' suites against bin/skillgate

test-python: build ## Python client tests (clients/python) against bin/skillgate; needs python3-pytest
	SKILLGATE_BIN=$(CURDIR)/$(BIN) clients/python/run-tests.sh

test-rootless: ## As root: the sandbox and gateway tests again as user skillgate-rootless (rootless mode), their skips checked like make unit's; fails if that mode cannot work
	./.ci/test-rootless

.PHONY: test-cgroup2
test-cgroup2: ## As root: boot Debian's kernel in qemu on cgroup v2 and run the sandbox's limits and isolation tests there, root and rootless (skips without qemu unless CI)
	./.ci/test-cgroup2

fuzz: ## Run every Fuzz target of both modules for FUZZTIME (default 3s)
	./.ci/fuzz $(FUZZTIME)

.PHONY: test-mcp-conformance
test-mcp-conformance: build ## The official MCP conformance suite against bin/skillgate's /mcp (Node 22 from npm, cached)
	./.ci/mcp-conformance $(BIN)

.PHONY: test-typescript
test-typescript: build ## The TypeScript client's tests (node --test) against bin/skillgate
	SKILLGATE_BIN=$(CURDIR)/$(BIN) clients/typescript/run-tests.sh

bench: ## Go micro-benchmarks, then the gateway against the ceiling and the peers (BENCH_ARGS=--full for the long run)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	$(BENCHMOD) $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	$(GO) run ./cmd/skillgate-bench compare $(BENCH_ARGS)
	$(GO) run ./cmd/skillgate-bench flood --duration 5s
	$(GO) run ./cmd/skillgate-bench preload

docs: ## Render docs/architecture.svg from docs/architecture.dot (Debian: apt-get install graphviz)
	@command -v dot >/dev/null || { echo "make docs needs Graphviz's dot: apt-get install -y graphviz" >&2; exit 1; }
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg

mutation: ## Mutation testing of one package, PKG=./session (minutes; not part of test): JSON report in .mutation/
	@mkdir -p $(MUTATION_DIR)
	GOFLAGS='$(GOFLAGS) -count=1' $(GO) tool gremlins unleash --workers $(MUTATION_WORKERS) \
		--timeout-coefficient $(MUTATION_TIMEOUT) --exclude-files '/' \
		--output $(MUTATION_REPORT) $(MUTATION_ARGS) $(PKG)

mutation-recheck: ## Re-run only the survivors of the last make mutation PKG=... against today's tests (RECHECK_STATUS="LIVED")
	$(GO) run ./internal/mutrecheck -report $(MUTATION_REPORT) -pkg $(PKG) \
		-status '$(RECHECK_STATUS)' -timeout $(RECHECK_TIMEOUT) -workers $(RECHECK_WORKERS) $(RECHECK_ARGS)

DURATION ?= 30m
soak: build ## Steady mixed load (framed, HTTP, MCP; runs, blobs, uploads) for DURATION (default 30m): RSS, goroutines, fds, data dir over time, and whether they stay flat
	$(GO) run ./cmd/skillgate-bench soak --bin $(BIN) --duration $(DURATION)

bench-rootless: ## Trivial run_code latency and throughput: root mode, rootless mode, a bare Python spawn
	./.ci/test-rootless --bench

clean: ## Remove build output
	rm -rf bin dist

.PHONY: dist
dist: ## Release files in dist/: static linux/amd64 and linux/arm64 binaries, the Python wheel and sdist, the npm tarball, SHA256SUMS
	VERSION='$(VERSION)' COMMIT='$(COMMIT)' GO='$(GO)' ./.ci/dist
