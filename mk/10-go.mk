# The Go core, the CLI and every Go package's tests.
KVHASH_CLI := $(BUILD)/bin/kvhash
# Go and Go assembly: every Go build output depends on both.
GO_SOURCES := $(shell find . \( -name '*.go' -o -name '*.s' \) -not -path './build/*' 2>/dev/null) go.mod go.sum
# Fragments add build outputs that Go tests load (the wasm module, ...).
GO_TEST_DEPS :=

BUILD_TARGETS += $(KVHASH_CLI)
TEST_TARGETS  += go-lint go-test
BENCH_TARGETS += bench-hash

$(KVHASH_CLI): $(GO_SOURCES)
	$(GO) build -o $@ ./cmd/kvhash

.PHONY: go-lint go-test bench-hash
go-lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Then core once more without its assembly (-tags purego), so the portable
# paths that other architectures run pass every test here too.
go-test: $$(GO_TEST_DEPS)
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -tags purego ./core

bench-hash:
	$(GO) test -run "^$$" -bench "^BenchmarkHashing$$" -benchmem -count=1 ./core | $(GO) run ./internal/cmd/benchratio -baseline floor
