//go:build wasip1

package main

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/kvhash/kvhash/internal/abi"
)

// mem is the module's allocation table: the buffers the host may pass.
var mem allocTable

// budget guards the heap against growing past the module's memory (see
// budget.go); the host may lower the limit with KVHASH_WASM_MEMORY_LIMIT.
var budget = newMemoryBudget(parseMemoryLimit(os.Getenv(MemoryLimitEnv)))

func init() { budget.apply() }

//go:wasmexport kvhash_alloc
func kvhash_alloc(size uint32) (ptr uint32) {
	defer catchValue(&ptr)
	if err := mem.room(uint64(size)); err != nil {
		fail(fmt.Errorf("kvhash_alloc: %w", err))
		return 0
	}
	if err := budget.admit(uint64(size), fmt.Sprintf("kvhash_alloc(%d)", size)); err != nil {
		fail(err)
		return 0
	}
	// Whole words, so every buffer is 8-byte aligned for u64 arrays.
	words := make([]uint64, max(1, (uint64(size)+7)/8))
	base := unsafe.Pointer(&words[0])
	b := unsafe.Slice((*byte)(base), size)
	if err := mem.add(uint32(uintptr(base)), b, words); err != nil {
		fail(err)
		return 0
	}
	return uint32(uintptr(base))
}

//go:wasmexport kvhash_free
func kvhash_free(ptr uint32) {
	defer func() {
		if v := recover(); v != nil {
			fail(abi.Recovered(v))
		}
	}()
	if ptr == 0 {
		return
	}
	if err := mem.remove(ptr); err != nil {
		fail(fmt.Errorf("kvhash_free: %w", err))
	}
}

// copyOut is kvhash_last_error and kvhash_version: msg into the caller's
// buffer as a NUL-terminated string, returning its full length or a
// negative status.
func copyOut(buf, capacity uint32, msg string) int32 {
	var a abi.Args
	dst := view[byte](&mem, &a, buf, capacity, "buf")
	if a.Err != nil {
		return fail(a.Err)
	}
	return int32(abi.CopyMessage(dst, msg))
}

//go:wasmexport kvhash_last_error
func kvhash_last_error(buf, capacity uint32) (n int32) {
	defer catch(&n)
	return copyOut(buf, capacity, lastError)
}

//go:wasmexport kvhash_version
func kvhash_version(buf, capacity uint32) (n int32) {
	defer catch(&n)
	return copyOut(buf, capacity, abi.Version())
}

//go:wasmexport kvhash_spec_version
func kvhash_spec_version(buf, capacity uint32) (n int32) {
	defer catch(&n)
	return copyOut(buf, capacity, abi.SpecVersion())
}
