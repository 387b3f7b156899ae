# The conformance suite: one testee a binding (conformance/testees), all
# driven by the runner (conformance/runner) through the protocol described
# in conformance/README.md. `make conformance` builds everything the
# testees load, then runs every vector group, the random differential round
# and the random index round through every binding.
CONF_BIN      := $(BUILD)/conformance
GOCORE_TESTEE := $(CONF_BIN)/gocore-testee
WAZERO_TESTEE := $(CONF_BIN)/wazero-testee
C_TESTEE      := $(CONF_BIN)/c-testee
C_TESTEE_SRC  := $(wildcard conformance/testees/c/*.c conformance/testees/c/*.h)
CONF_CC       ?= cc
# Extra runner flags, e.g. make conformance CONFORMANCE_ARGS='--seed 7 --cases 20000'.
CONFORMANCE_ARGS ?=

CONFORMANCE_TARGETS += conformance-run
TEST_TARGETS        += conformance-run

$(GOCORE_TESTEE): $(GO_SOURCES)
	$(GO) build -o $@ ./conformance/testees/gocore

$(WAZERO_TESTEE): $(GO_SOURCES)
	$(GO) build -o $@ ./conformance/testees/wazero

# The C testee links the library by its build path (rpath), so it always
# exercises the freshly built libkvhash.so.
$(C_TESTEE): $(C_TESTEE_SRC) $(BUILD)/include/kvhash.h $(BUILD)/libkvhash.so
	@mkdir -p $(CONF_BIN)
	$(CONF_CC) -std=c11 -O2 -Wall -Wextra -Werror -I$(BUILD)/include -o $@ \
	  $(filter %.c,$(C_TESTEE_SRC)) -L$(BUILD) -lkvhash -Wl,-rpath,$(abspath $(BUILD))

# Every testee's binding: the Go testees, the C library and its testee, the
# wasm module (wazero, Node, wasmtime), the venv (oracle, Python package)
# and the Python package's C extension.
CONFORMANCE_DEPS := $(GOCORE_TESTEE) $(WAZERO_TESTEE) $(C_TESTEE) \
  $(BUILD)/libkvhash.so $(BUILD)/kvhash.wasm $(VENV_STAMP) $(PY_SPEEDUPS)

.PHONY: conformance-run
conformance-run: $(CONFORMANCE_DEPS)
	$(GO) run ./conformance/runner $(CONFORMANCE_ARGS)
