// Command wasm is the WebAssembly module of kvhash, a WASI reactor built
// with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o build/kvhash.wasm ./wasm
//
// Its exports (files tagged wasip1) have the names and semantics of the C
// API (capi/include/kvhash.h), with pointers and sizes as u32 offsets and
// lengths in linear memory. The host allocates every buffer it passes with
// kvhash_alloc; the allocation table (alloc.go) checks each pointer and
// length against the live allocations, so bad input is an error status
// (KVHASH_ERR_OUT_OF_BOUNDS), never a trap. docs/wasm/embedding.md tells a
// host how to load and call it.
//
// The files without the wasip1 tag (this one, the allocation table, the
// error reporting) build on every platform, so that `go vet ./...` and
// `go test ./...` cover them on the developer's machine.
package main

// main is not called in a reactor: the host calls _initialize, which
// runs the package initializers, then calls the exports.
func main() {}
