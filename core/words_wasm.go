//go:build wasm

package core

import "unsafe"

// WebAssembly is little-endian and allows unaligned loads, but its Go
// backend does not fuse two 32-bit loads into one 64-bit load as the
// native backends do: read the word directly.
func pair(t []uint32, i int) uint64 {
	_ = t[i+1]
	return *(*uint64)(unsafe.Pointer(&t[i]))
}
