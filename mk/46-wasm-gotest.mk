# core's Go tests compiled to WebAssembly (GOOS=wasip1 GOARCH=wasm) and run
# in wazero by internal/cmd/wasiexec, so that what only the module runs
# (core/blocks64_wasm.s, the byte-order and word-reading paths of a wasm
# build) is tested where it runs. About 20 s on the development machine,
# most of it TestIndexAgreesWithModel.
WASIEXEC := $(BUILD)/bin/wasiexec

TEST_TARGETS += go-test-wasm

$(WASIEXEC): $(GO_SOURCES)
	$(GO) build -o $@ ./internal/cmd/wasiexec

.PHONY: go-test-wasm
go-test-wasm: $(WASIEXEC)
	GOOS=wasip1 GOARCH=wasm $(GO) test -count=1 -exec $(abspath $(WASIEXEC)) ./core
