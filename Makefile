# raftka: the two commands a new machine needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/raftka
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
FUZZTIME ?= 10s

.PHONY: build build-previous run test test-long lint bench bench-compare fuzz clean image compose-up compose-down

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/raftka

# bin/raftka-$(REV): the binary of an earlier git revision (a tag or a
# commit), built from `git archive` in a temporary directory, for rolling
# upgrade tests (test/e2e's upgrade test uses bin/raftka-<rev> when present).
build-previous:
	@test -n "$(REV)" || { echo "usage: make build-previous REV=<tag or commit>"; exit 2; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  git archive "$(REV)" | tar -x -C "$$tmp"; \
	  mkdir -p bin; out="$$(pwd)/bin/raftka-$(REV)"; \
	  (cd "$$tmp" && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(REV)' -o "$$out" ./cmd/raftka); \
	  echo "built $$out"

# A three-node cluster on this machine: clients at localhost:9092,9093,9094.
run: build
	$(BIN) local --nodes 3 --dir data --base-port 9092

# Unit, integration and end-to-end tests, all under the race detector.
test:
	$(GO) test -race -count=1 -timeout 23m ./...

# Soak and chaos runs, too long for CI.
test-long:
	$(GO) test -race -count=1 -tags long -timeout 120m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Every package's Go benchmarks, then raftka against kfake on real
# processes (test/bench.sh: one node, three nodes RF=3, failover).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...
	test/bench.sh

# This tree against an earlier revision on this machine: both binaries,
# test/bench.sh runs in turn and the Go benchmarks of both trees (benchstat),
# medians and ratios printed (test/bench-compare.sh; its knobs select rows).
bench-compare: build
	@test -n "$(OLD)" || { echo "usage: make bench-compare OLD=<tag or commit>"; exit 2; }
	$(MAKE) build-previous REV=$(OLD)
	test/bench-compare.sh bin/raftka-$(OLD) $(BIN) $(OLD)

# A short run of every fuzz target (go test runs one -fuzz target at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# The FROM-scratch container image and a three-node compose cluster
# (client ports 127.0.0.1:9092-9094 unless RAFTKA_PORT_1..3 say otherwise).
image:
	deploy/build-image.sh

compose-up: image
	docker-compose -f deploy/docker-compose.yml -p raftka up -d

compose-down:
	docker-compose -f deploy/docker-compose.yml -p raftka down -v

clean:
	rm -rf bin
