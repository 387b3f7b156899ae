# The WASM hosts: the Go host on wazero (bindings/go/wasmhost) and the Node
# package (bindings/js), both tested and benchmarked against the module.
WASMHOSTS_MODULE := $(BUILD)/kvhash.wasm
WASMHOSTS_BENCH  := $(BUILD)/bench-wasm
NODE ?= node

# bindings/go/wasmhost's tests load the module.
GO_TEST_DEPS  += $(WASMHOSTS_MODULE)
TEST_TARGETS  += js-test
BENCH_TARGETS += bench-wasm

.PHONY: js-test bench-wasm

js-test: $(WASMHOSTS_MODULE)
	KVHASH_WASM=$(abspath $(WASMHOSTS_MODULE)) $(NODE) --test bindings/js/test/*.test.js

# Start times in wazero (cold: empty compilation cache; cached: the second
# start from the same cache), then 8k-token hashing through wazero and
# through Node, each against native Go core measured in the same run. Every
# side uses its best API, the fused block + sequence call: native
# core.AppendBlockAndSequenceHashes (BenchmarkHash8k/native, the baseline of
# both ratios), the module's kvhash_block_and_sequence_hashes in wazero
# (BenchmarkHash8k/wazero) and in Node (node-hash8k). On a shared machine
# the best of three runs counts. About 30 s; each Go wazero line's x_native
# is native time / wazero time of that run.
bench-wasm: $(WASMHOSTS_MODULE)
	@mkdir -p $(WASMHOSTS_BENCH)
	@echo "== module start in wazero (ms/start)"
	KVHASH_WASM=$(abspath $(WASMHOSTS_MODULE)) $(GO) test -run '^$$' -bench '^BenchmarkStart$$' -benchtime 3x \
	  ./bindings/go/wasmhost | tee $(WASMHOSTS_BENCH)/start.txt | grep '^Benchmark'
	@echo "== 8k-token prompt, block size 16, block + sequence hashes (fused call on every side)"
	KVHASH_WASM=$(abspath $(WASMHOSTS_MODULE)) $(GO) test -run '^$$' -bench '^BenchmarkHash8k$$' -benchtime 1s -count 3 \
	  ./bindings/go/wasmhost | tee $(WASMHOSTS_BENCH)/hash.txt | grep '^Benchmark'
	KVHASH_WASM=$(abspath $(WASMHOSTS_MODULE)) $(NODE) bindings/js/bench/bench.js 3 | tee $(WASMHOSTS_BENCH)/node.txt
	@awk 'function best(old, v) { return (old == "" || v + 0 < old + 0) ? v : old } \
	      /^BenchmarkHash8k\/native/ { for (i = 1; i < NF; i++) if ($$(i+1) == "ns/op") native = best(native, $$i) } \
	      /^BenchmarkHash8k\/wazero/ { for (i = 1; i < NF; i++) if ($$(i+1) == "ns/op") wazero = best(wazero, $$i) } \
	      /^node-hash8k/ { node = $$2 } \
	      /^BenchmarkStart\/cold/   { for (i = 1; i < NF; i++) if ($$(i+1) == "ms/start") cold = $$i } \
	      /^BenchmarkStart\/cached/ { for (i = 1; i < NF; i++) if ($$(i+1) == "ms/start") cached = $$i } \
	      END { \
	        if (!native || !wazero || !node || !cold || !cached) { print "bench-wasm: missing results"; exit 1 } \
	        printf "== summary (best of 3; throughput as a fraction of native Go core; target >= 0.2)\n"; \
	        printf "wazero start: cold %.0f ms, cached %.1f ms (target < 50 ms)\n", cold, cached; \
	        printf "8k tokens, fused block + sequence: native %.0f ns, wazero %.0f ns (%.2fx native), node %.0f ns (%.2fx native)\n", \
	          native, wazero, native / wazero, node, native / node }' \
	  $(WASMHOSTS_BENCH)/start.txt $(WASMHOSTS_BENCH)/hash.txt $(WASMHOSTS_BENCH)/node.txt
