# skillgate: `make help` lists the targets.

GO        ?= go
BIN       := bin/skillgate
FUZZTIME  ?= 3s
BENCHTIME ?= 1s
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
RUN_ARGS  ?=

.DEFAULT_GOAL := help
.PHONY: help build run test lint vet fmt-check staticcheck unit fuzz bench clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/skillgate
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/skillgate

run: build ## Run the gateway with the example skills (framed :7400, HTTP :8080, metrics :9400)
	$(BIN) serve --log-format console --skills-dir examples/skills --data-dir .data $(RUN_ARGS)

test: lint unit fuzz ## Lint, race-enabled tests, and a few seconds of every fuzz target

lint: fmt-check vet staticcheck ## gofmt, go vet and staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

unit: ## go test -race ./...
	$(GO) test -race -count=1 -timeout 20m ./...

fuzz: ## Run every Fuzz target for FUZZTIME (default 3s)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg >/dev/null; \
	  done; \
	done

bench: ## Go micro-benchmarks with -benchmem
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

clean: ## Remove build output
	rm -rf bin
