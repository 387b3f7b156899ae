// Command wazero is the conformance testee of the kvhash WebAssembly
// module run in wazero through bindings/go/wasmhost: it answers the testee
// protocol (conformance/README.md) by calling the module.
//
// The module is KVHASH_WASM (default build/kvhash.wasm).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/kvhash/kvhash/bindings/go/wasmhost"
	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

func main() {
	path := os.Getenv("KVHASH_WASM")
	if path == "" {
		path = "build/kvhash.wasm"
	}
	ctx := context.Background()
	m, err := wasmhost.LoadFile(ctx, path, wasmhost.Config{Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "wazero testee:", err)
		os.Exit(1)
	}
	defer m.Close(ctx)
	b, err := newBinding(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wazero testee:", err)
		os.Exit(1)
	}
	if err := protocol.Serve(os.Stdin, os.Stdout, b); err != nil {
		fmt.Fprintln(os.Stderr, "wazero testee:", err)
		os.Exit(1)
	}
}
