// Package wasmhost runs the kvhash WebAssembly module (build/kvhash.wasm) in
// wazero and exposes it with the same shape as package core: block hashes,
// sequence hashes, seeds, chain steps and the radix-tree index.
//
// Every hash and every index decision comes from the module; this package
// only moves bytes across the module boundary and turns statuses into Go
// errors. It exists so that Go programs can check, benchmark or embed the
// exact artifact other runtimes (browsers, Node, wasmtime) load.
//
// A Module is safe for concurrent use. One module instance runs one call at
// a time, so hashing calls borrow an instance from a small pool (grown only
// under contention), and each Index lives in, and pins, one instance.
package wasmhost
