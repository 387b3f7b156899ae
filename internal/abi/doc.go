// Package abi is everything the two flat, foreign-function exports of
// kvhash share: the C library (capi/, cgo) and the WebAssembly module
// (wasm/, go:wasmexport).
//
// It defines the status codes of the ABI, maps core's errors to them, owns
// the table of index handles, and has one Go function per export that
// takes Go slices and strings. The export layers only turn their pointers
// into slices (with View and String here, or the WASM allocation table),
// call the function of this package, write its outputs and report the
// error. No fact about hashing or the index lives here: that is core's.
//
// Slices handed to this package may be views of foreign memory (the C
// caller's buffers). Nothing here or in core keeps them past the call.
package abi
