# kvrouter's library in the middle (router/indexer, router/route,
# router/snapshot): its tests run with every Go package's (go-test in
# mk/10-go.mk); these are its benchmarks. One core (-cpu 1): the figures
# are one-core figures.
BENCH_TARGETS += bench-router-lib

.PHONY: bench-router-lib
bench-router-lib:
	$(GO) test -run '^$$' -bench '^BenchmarkHandleBatch$$' -benchtime 2s -cpu 1 -count 1 ./router/indexer
	$(GO) test -run '^$$' -bench '^BenchmarkRoute$$' -benchtime 2s -cpu 1 -count 1 ./router/route
