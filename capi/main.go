// Command capi is the C ABI of kvhash. Built with
//
//	go build -buildmode=c-shared -o build/libkvhash.so ./capi
//
// it is libkvhash.so, declared by the hand-written include/kvhash.h (the
// C API reference). Each export here only turns C pointers into Go slices,
// calls internal/abi and writes the outputs back; every export recovers
// panics into KVHASH_ERR_INTERNAL.
//
// Exports run on the calling C thread, so the per-thread last error lives
// in a C _Thread_local buffer (lasterror.go) that Go fills on failure.
package main

func main() {}
