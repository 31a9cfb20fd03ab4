# make run   : build and start the server on its embedded demo config (data in ./data)
# make test  : vet + the whole test suite with engine invariants checked after every command
# make bench : the benchmark harness (writes results/)
GO      ?= go
BIN     := bin
GOFLAGS := -buildvcs=false

.PHONY: all build run test test-short bench bench-quick soak fuzz clean

all: build

build:
	$(GO) build $(GOFLAGS) -o $(BIN)/exchanged ./cmd/exchanged
	$(GO) build $(GOFLAGS) -o $(BIN)/audit ./tools/audit

run: build
	./$(BIN)/exchanged -data ./data

test:
	$(GO) vet ./...
	$(GO) test $(GOFLAGS) -tags invariants -count=1 -timeout 12m ./...

bench:
	$(GO) test $(GOFLAGS) -run '^$$' -bench . -benchmem ./engine/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseFixed -fuzztime 60s ./engine/

clean:
	rm -rf $(BIN) results
