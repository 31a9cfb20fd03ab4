# make run   : build and start the server on its embedded demo config (data in ./data)
# make test  : vet + the whole test suite with engine invariants checked after every command
# make bench : the benchmark harness (writes results/), the replicated run included
GO      ?= go
BIN     := bin
GOFLAGS := -buildvcs=false
# compile for this CPU's x86-64 level (v3 here), unless GOAMD64 is set:
# see tools/goamd64.sh
GOAMD64 ?= $(shell tools/goamd64.sh)
export GOAMD64

.PHONY: all build run run-cluster test test-short bench bench-quick bench-contracts bench-replicated bench-model pgo soak fuzz clean ccxt

all: build

build:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/audit ./tools/audit

run:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	./$(BIN)/exchanged -data ./data

# three replicated nodes on loopback with the demo config (tools/run-cluster.sh,
# README.md "A replicated cluster")
run-cluster:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	BIN=$(BIN)/exchanged tools/run-cluster.sh

# the reference client for the conformance test (cmd/exchanged/ccxt_test.go),
# pinned, installed into the ignored folder .ccxt/ when missing
CCXT_VERSION := 4.5.84
CCXT_STAMP   := .ccxt/.installed-$(CCXT_VERSION)

ccxt: $(CCXT_STAMP)

$(CCXT_STAMP):
	mkdir -p .ccxt
	test -f .ccxt/package.json || echo '{"name":"ccxt-conformance","private":true}' > .ccxt/package.json
	cd .ccxt && npm install --no-audit --no-fund --loglevel=error --save-exact ccxt@$(CCXT_VERSION)
	touch $@

test: ccxt
	$(GO) vet ./...
	CCXT_REQUIRED=1 $(GO) test $(GOFLAGS) -tags invariants -count=1 -timeout 12m ./...

# quicker: shorter streams and crash loops, and the ccxt conformance test
# only if .ccxt/ is installed
test-short:
	$(GO) vet ./...
	$(GO) test $(GOFLAGS) -short -tags invariants -count=1 ./...

# long runs that do not fit make test: the kill -9 crash test over many
# children, the three-node group's leader killed CLUSTER_KILLS times, then
# every fuzz target for a few minutes (SOAK_ITERS, CLUSTER_KILLS, FUZZTIME)
SOAK_ITERS ?= 50
CLUSTER_KILLS ?= 30
FUZZTIME   ?= 3m
soak:
	JOURNAL_CRASH_ITERS=$(SOAK_ITERS) $(GO) test $(GOFLAGS) -tags invariants -count=1 -run '^TestCrash$$' -timeout 120m ./core/
	EXCHANGED_CLUSTER_KILLS=$(CLUSTER_KILLS) $(GO) test $(GOFLAGS) -tags invariants -count=1 -run '^TestCluster' -timeout 60m ./cmd/exchanged/
	GO=$(GO) tools/fuzz.sh ./engine/ FuzzEngine $(FUZZTIME)
	GO=$(GO) tools/fuzz.sh ./engine/ FuzzParseFixed $(FUZZTIME)
	GO=$(GO) tools/fuzz.sh ./engine/ FuzzAppendFixed $(FUZZTIME)
	GO=$(GO) tools/fuzz.sh ./edge/ FuzzDecodeOrder $(FUZZTIME)
	GO=$(GO) tools/fuzz.sh ./edge/ FuzzREST $(FUZZTIME)

bench:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/benchrun ./bench/cmd/benchrun
	./$(BIN)/benchrun -out results

bench-quick:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/benchrun ./bench/cmd/benchrun
	./$(BIN)/benchrun -out results -quick

# the load sweeps of make bench alone: spot-only and 30% contract REST
# mixes against one server, side by side with the bare target (no go
# benchmarks; bench/README.md, "The contract mix")
bench-contracts:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/benchrun ./bench/cmd/benchrun
	./$(BIN)/benchrun -out results -skip-engine -skip-core -skip-edge -contracts 0,0.3 -replicated off

# the replicated run of make bench alone: a three-node group on loopback
# against the single node, same spot-only load, side by side; saturation
# ratio and p50/p99 at one offered rate (bench/README.md, "The replicated
# run")
bench-replicated:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/benchrun ./bench/cmd/benchrun
	./$(BIN)/benchrun -out results -replicated only

# instructions and simulated cache misses of the engine benchmark's timed
# part: deterministic, for comparing engine changes on a noisy machine
bench-model:
	bench/engine-model.sh

# regenerate cmd/exchanged/default.pgo, the profile the server is built with
pgo:
	bench/pgo.sh

fuzz:
	GO=$(GO) tools/fuzz.sh ./engine/ FuzzParseFixed 60s

clean:
	rm -rf $(BIN) results
