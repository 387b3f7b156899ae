# The WebAssembly module: a WASI (wasip1) reactor exporting the kvhash ABI.
WASM_MODULE := $(BUILD)/kvhash.wasm

BUILD_TARGETS += $(WASM_MODULE)
# wasm/module_test.go runs the built module in wazero.
GO_TEST_DEPS  += $(WASM_MODULE)

# Built aside and moved into place, so that a reader polling build/ never
# sees half a module.
$(WASM_MODULE): $(GO_SOURCES)
	@mkdir -p $(BUILD)/wasm
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(BUILD)/wasm/kvhash.wasm ./wasm
	cp $(BUILD)/wasm/kvhash.wasm $@.tmp
	mv -f $@.tmp $@
