# kvhash build. Each area owns a fragment in mk/ and registers its targets
# in the lists below; this file only wires them together.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO     ?= go
BUILD  := build
VENV   := $(BUILD)/venv
PY     := $(VENV)/bin/python

# Fragments append to these.
BUILD_TARGETS :=
TEST_TARGETS  :=
BENCH_TARGETS :=
CONFORMANCE_TARGETS :=

.SECONDEXPANSION:
include $(sort $(wildcard mk/*.mk))

.PHONY: build test test-verbose bench run vectors conformance venv clean
build: $(BUILD_TARGETS)
# Quiet: one line a step, a failing step's log, one summary line at the end
# (mk/run-tests.sh). test-verbose prints everything, as the steps run.
test:
	@bash mk/run-tests.sh $(TEST_TARGETS)
test-verbose: $(TEST_TARGETS)
bench: $(BENCH_TARGETS)
conformance: $(CONFORMANCE_TARGETS)

clean:
	rm -rf $(BUILD)
