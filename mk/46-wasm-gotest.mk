# core's Go tests compiled to WebAssembly (GOOS=wasip1 GOARCH=wasm) and run
# in wazero by internal/cmd/wasiexec, so that what only the module runs
# (core/blocks64_wasm.s, the byte-order and word-reading paths of a wasm
# build) is tested where it runs. About 50 s on two cores (the model
# agreement test runs two of its seeds there: see TestIndexAgreesWithModel).
WASIEXEC := $(BUILD)/bin/wasiexec

TEST_TARGETS += go-test-wasm

$(WASIEXEC): $(GO_SOURCES)
	$(GO) build -o $@ ./internal/cmd/wasiexec

.PHONY: go-test-wasm
go-test-wasm: $(WASIEXEC)
	GOOS=wasip1 GOARCH=wasm $(GO) test -count=1 -exec $(abspath $(WASIEXEC)) ./core
