# kvmock, the simulated vLLM engine (cmd/kvmock, router/kvmock). Its tests
# run with every Go package's (go-test in mk/10-go.mk).
KVMOCK_BIN := $(BUILD)/bin/kvmock

BUILD_TARGETS += $(KVMOCK_BIN)

$(KVMOCK_BIN): $(GO_SOURCES)
	$(GO) build -o $@ ./cmd/kvmock

.PHONY: kvmock fuzz-kvmock
kvmock: $(KVMOCK_BIN)

# The fuzz targets (request decoding, the handler, the block pool), briefly.
fuzz-kvmock:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequests$$' -fuzztime 10s ./router/kvmock
	$(GO) test -run '^$$' -fuzz '^FuzzHandler$$' -fuzztime 10s ./router/kvmock
	$(GO) test -run '^$$' -fuzz '^FuzzCacheOps$$' -fuzztime 10s ./router/kvmock
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCompletionDifferential$$' -fuzztime 10s ./router/kvmock

BENCH_TARGETS += bench-kvmock

.PHONY: bench-kvmock
# The engine's own cost per simulated request, and the wire encoder; its
# body decoding against the encoding/json one it replaced (alternated).
bench-kvmock:
	$(GO) test -run '^$$' -bench '^Benchmark(Generate|EncodeBatch)$$' -benchmem -count=1 ./router/kvmock
	$(GO) test -run '^$$' -bench '^BenchmarkDecodeCompletion$$' -benchtime 1s -cpu 1 -count=1 ./router/kvmock

TEST_TARGETS += kvmock-python

.PHONY: kvmock-python
# The tests that hold kvmock to Python's own encoders (msgspec's bytes,
# enginehash's CPython oracle for the ids), with a missing venv a failure
# rather than a skip; then the msgspec script's types.
kvmock-python: $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -count=1 -run 'Msgspec|VLLMsFormula' ./router/kvmock
	$(VENV)/bin/mypy --strict --no-error-summary router/kvmock/testdata/msgspec_batch.py
