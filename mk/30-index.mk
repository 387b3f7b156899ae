# The core index: its trace-replay benchmark and micro-benchmarks. Its
# tests run with every Go package's (go-test in mk/10-go.mk).
#
# INDEX_TRACE selects another Mooncake-format trace (default: KVHASH_TRACE,
# else ../shared/data/mooncake-synthetic-trace.jsonl beside the repository).
INDEX_TRACE ?=

BENCH_TARGETS += bench-index

.PHONY: bench-index

# One core (-cpu 1) for the replay: its block-ops/s is a one-core figure.
bench-index:
	$(GO) test -run '^$$' -bench '^BenchmarkTraceReplay$$' -benchtime 3x -cpu 1 -count 1 \
	  ./core/internal/indexbench $(if $(INDEX_TRACE),-args -tracefile $(INDEX_TRACE))
	$(GO) test -run '^$$' -bench '^Benchmark(FindMatches|FindMatchesParallel|Apply|DecodeEvent)$$' \
	  -benchtime 1s -count 1 ./core
	$(GO) test -run '^$$' -bench '^BenchmarkClearWhileMatching$$' -benchtime 3x -count 1 ./core
