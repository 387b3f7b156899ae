# The index side by side with NVIDIA Dynamo 1.6.1's own indexes (crates.io
# dynamo-kv-router, pinned in bench/dynamo/Cargo.toml and Cargo.lock).
# Bench only: nothing here is part of make test. cargo fetches the locked
# crates from crates.io the first time (--locked: exactly those versions).
#
#   make bench-dynamo                    all eight streams, 7 alternating runs each
#   make bench-dynamo DYNAMO_STREAMS=w128-bs16-evict,w16-bs64-evict DYNAMO_RUNS=9
#
# Streams are made once from the Mooncake trace (INDEX_TRACE, see
# mk/30-index.mk; a generated trace when it is absent) into build/indexstreams.
DYNAMO_RUNS    ?= 7
DYNAMO_STREAMS ?=
CARGO          ?= cargo
INDEXSTREAM    := $(BUILD)/bin/indexstream
DYNAMO_BENCH   := $(BUILD)/cargo/release/kvhash-dynamo-bench
INDEX_STREAMS  := $(BUILD)/indexstreams

BENCH_TARGETS += bench-dynamo

.PHONY: bench-dynamo bench-dynamo-python index-streams

$(INDEXSTREAM): $(GO_SOURCES)
	$(GO) build -o $@ ./core/internal/indexbench/cmd/indexstream

$(DYNAMO_BENCH): bench/dynamo/Cargo.toml bench/dynamo/Cargo.lock $(wildcard bench/dynamo/src/*.rs)
	CARGO_TARGET_DIR=$(abspath $(BUILD)/cargo) $(CARGO) build --quiet --release --locked \
	  --manifest-path bench/dynamo/Cargo.toml

# The streams depend on the generator's sources (a changed simulation makes
# new streams), not on every Go file.
$(INDEX_STREAMS)/.done: $(wildcard core/internal/indexbench/*.go) | $(INDEXSTREAM)
	@mkdir -p $(INDEX_STREAMS)
	$(INDEXSTREAM) gen -out $(INDEX_STREAMS) $(if $(INDEX_TRACE),-trace $(INDEX_TRACE)) >/dev/null
	@touch $@

index-streams: $(INDEX_STREAMS)/.done

bench-dynamo: $(INDEXSTREAM) $(DYNAMO_BENCH) $(INDEX_STREAMS)/.done
	$(INDEXSTREAM) compare -streams $(INDEX_STREAMS) -dynamo $(DYNAMO_BENCH) -runs $(DYNAMO_RUNS) \
	  $(if $(DYNAMO_STREAMS),-only $(DYNAMO_STREAMS))
	$(MAKE) --no-print-directory bench-dynamo-python

# Through Python: kvhash's Index against ai-dynamo-runtime's RadixTree (the
# wheel in the venv), on the same streams.
# (Second expansion: the Python fragment that names these is read later.)
bench-dynamo-python: $(INDEX_STREAMS)/.done $$(BUILD)/libkvhash.so $$(PY_SPEEDUPS) $$(VENV_STAMP)
	$(PY_ARTEFACT_ENV) PYTHONPATH=python/src $(PY) python/benchmarks/bench_index_vs_dynamo.py --streams $(INDEX_STREAMS) --runs $(DYNAMO_RUNS) \
	  $(if $(DYNAMO_STREAMS),--only $(DYNAMO_STREAMS))
