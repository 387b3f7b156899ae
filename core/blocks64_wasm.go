//go:build wasm && !purego

package core

import "unsafe"

// On WebAssembly the Go compiler has no 64x64->128-bit multiply and no
// byte swap, so bits.Mul64 and bits.ReverseBytes64 become long sequences
// of 64-bit operations, and it keeps much of a loop's state in its
// linear-memory stack. The 16-token loop, nearly all of the module's
// hashing time, is therefore written in WebAssembly (blocks64_wasm.s) with
// every value in locals: about three times faster in wazero.
//
// hashBlocks64B checks every index the Go loop would use before the
// assembly, which takes raw pointers, runs, so that it never reads or
// writes outside the slices it is given.
func hashBlocks64B(l, sq []uint64, tokens []uint32, stride int, k *seededKeys) uint64 {
	n := len(l)
	if n == 0 {
		return 0
	}
	if n > 1 && (stride < 0 || stride > len(tokens)) {
		panic("core: block stride out of range")
	}
	_ = tokens[(n-1)*stride+15]
	if sq != nil && n > 1 {
		_ = sq[n-2]
	}
	m := &k.mix
	words := [8]uint64{m[0], m[1], m[4], m[5], m[6], m[7], m[2], m[3]}
	return hashBlocks64BWasm(&l[0], unsafe.SliceData(sq), &tokens[0], n, stride, words)
}

// hashBlocks64BWasm is hashBlocks64BGo over n >= 1 blocks at
// tokens[i*stride:], writing l[0:n] and, when sq is not nil, sq[0:n-1].
// k[j] is the key of word j (tokens 2j and 2j+1) of every block, passed by
// value so that the assembly reads the keys at fixed offsets from its
// stack pointer.
//
//go:noescape
func hashBlocks64BWasm(l, sq *uint64, tokens *uint32, n, stride int, k [8]uint64) (chain uint64)
