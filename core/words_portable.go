//go:build !wasm

package core

// pair reads the little-endian word at token i, that is, at byte 4*i.
// Native compilers turn this into one 64-bit load on little-endian hosts.
func pair(t []uint32, i int) uint64 {
	return uint64(t[i]) | uint64(t[i+1])<<32
}
