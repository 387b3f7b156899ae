# kvrouter's library in the middle (router/indexer, router/route,
# router/snapshot): its tests run with every Go package's (go-test in
# mk/10-go.mk); these are its benchmarks. One core (-cpu 1): the figures
# are one-core figures.
BENCH_TARGETS += bench-router-lib

.PHONY: bench-router-lib
bench-router-lib:
	$(GO) test -run '^$$' -bench '^BenchmarkHandleBatch$$' -benchtime 2s -cpu 1 -count 1 ./router/indexer
	$(GO) test -run '^$$' -bench '^BenchmarkRoute$$' -benchtime 2s -cpu 1 -count 1 ./router/route
	@# A long prompt's route and end, against every block mapped (new/old).
	$(GO) test -run '^$$' -bench '^BenchmarkRouteLongPrompt$$' -benchtime 2000x -cpu 1 -count 1 ./router/route
	@# SGLang's emulation on a 12k-block prompt: its radix tree against a map a block (new/old).
	$(GO) test -run '^$$' -bench '^BenchmarkSGLangLongPrompt$$' -benchtime 2000x -cpu 1 -count 1 ./router/route/policy
	@# ZeroMQ receive through the capped transport's read buffer against
	@# zmq4's unbuffered reads, alternated over four runs (cpu-us/msg).
	@for i in 1 2 3 4; do $(GO) test -run '^$$' -bench '^BenchmarkReceive$$' -benchtime 20000x -count 1 ./router/zmqcap | grep '^Benchmark'; done
