# kvrouter side by side with NVIDIA Dynamo 1.6.1's standalone indexer
# (python -m dynamo.indexer from ai-dynamo-runtime in the venv), both fed
# the same generated vLLM-format ZeroMQ stream from one PUB socket per
# engine on loopback and queried through the Dynamo-API /query both serve
# (router/internal/indexerbench; docs/guides/indexer-benchmark.md).
# Bench only. The whole matrix takes 8-9 minutes on 2 shared cores:
#
#   make bench-indexer                                     2M and 8M blocks, 4 and 32 engines,
#                                                          burst, 500k/s and 1.2M/s, 3 runs a side
#   make bench-indexer INDEXER_BENCH_BLOCKS=2M INDEXER_BENCH_RUNS=1    quick (under a minute)
#
# The table goes to build/bench-indexer.md as well as the terminal.
INDEXER_BENCH_ENGINES ?= 4,32
INDEXER_BENCH_BLOCKS  ?= 2M,8M
INDEXER_BENCH_RATES   ?= burst,500k,1.2M
INDEXER_BENCH_RUNS    ?= 3
INDEXER_BENCH_QPS     ?= 200
INDEXER_BENCH         := $(BUILD)/bin/indexerbench

BENCH_TARGETS += bench-indexer

.PHONY: bench-indexer

$(INDEXER_BENCH): $(GO_SOURCES)
	$(GO) build -o $@ ./router/internal/indexerbench/cmd/indexerbench

bench-indexer: $(INDEXER_BENCH) $(KVROUTER) $(VENV_STAMP)
	@mkdir -p $(BUILD)/bench-indexer-logs
	$(INDEXER_BENCH) -kvrouter $(KVROUTER) -python $(PY) \
	  -engines $(INDEXER_BENCH_ENGINES) -blocks $(INDEXER_BENCH_BLOCKS) -rates $(INDEXER_BENCH_RATES) \
	  -runs $(INDEXER_BENCH_RUNS) -qps $(INDEXER_BENCH_QPS) \
	  -logs $(BUILD)/bench-indexer-logs -out $(BUILD)/bench-indexer.md
