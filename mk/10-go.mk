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

.PHONY: go-lint go-test bench-hash run
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

# The main job, for now: hash a sample prompt with the CLI (the router demo
# takes this over when it exists).
run: $(KVHASH_CLI)
	@echo "# kvhash hash --block-size 4 1 2 ... 12   (Dynamo's published prompt)"
	@$(KVHASH_CLI) hash --block-size 4 1 2 3 4 5 6 7 8 9 10 11 12
	@echo "# the same prompt for LoRA adapter 'adapter-a', tenant 'tenant-7'"
	@$(KVHASH_CLI) hash --block-size 4 --lora adapter-a --namespace tenant-7 1 2 3 4 5 6 7 8 9 10 11 12
	@echo "# XXH3-64('test data', seed 1337)"
	@$(KVHASH_CLI) raw "test data"
	@$(KVHASH_CLI) version
