//go:build !purego

package core

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// On amd64 with AVX2 the 16-token loop hashes four blocks at a time in
// vector registers, leaving the scalar multiplier to the sequence chain.
// The chain's steps wait for each other, so its latency, not the block
// hashing, bounds a prompt's time; with the block hashes in the vector
// units the two run side by side (see BenchmarkHashing).

var useAVX2 = cpu.X86.HasAVX2

// avx2Keys is what hashBlocks64x4 reads: the seeded key words and the
// constants it needs, each repeated in all four 64-bit lanes, then the
// chain's scalar constants. The assembly's K_ offsets follow this layout.
type avx2Keys struct {
	mix     [8][4]uint64
	accInit [4]uint64
	mask32  [4]uint64
	prime   [4]uint64
	primeHi [4]uint64
	// The chain always uses the BaseSeed keys.
	bitflip1, bitflip2, primeScalar uint64
}

func newAVX2Keys(k *seededKeys) avx2Keys {
	a := avx2Keys{bitflip1: baseKeys.bitflip1, bitflip2: baseKeys.bitflip2, primeScalar: avalanche}
	for lane := range 4 {
		for j := range a.mix {
			a.mix[j][lane] = k.mix[j]
		}
		a.accInit[lane] = len64Acc
		a.mask32[lane] = 1<<32 - 1
		a.prime[lane] = avalanche
		a.primeHi[lane] = avalanche >> 32
	}
	return a
}

var avx2BaseKeys = newAVX2Keys(&baseKeys)

// hashBlocks64x4 hashes groups*4 blocks of 16 tokens, strideBytes apart
// from tokens, into l, and when sq is not nil extends the chain over each
// of them into sq. chainLo is the sequence hash before the first of them
// xored with bitflip1; it returns the same for the last.
//
//go:noescape
func hashBlocks64x4(l, sq *uint64, tokens *uint32, strideBytes, groups uintptr, keys *avx2Keys, chainLo uint64) uint64

func hashBlocks64B(l, sq []uint64, tokens []uint32, stride int, k *seededKeys) (chain uint64) {
	n := len(l)
	if !useAVX2 || n < 6 {
		return hashBlocks64BGo(l, sq, tokens, stride, k)
	}
	// The assembly trusts its pointers: check every block it will read
	// or write is in bounds before handing them over.
	_ = tokens[(n-1)*stride+15]
	if sq != nil {
		_ = sq[n-1]
	}
	keys := &avx2BaseKeys
	if k != &baseKeys {
		seeded := newAVX2Keys(k)
		keys = &seeded
	}
	// Block 0 starts the chain; groups of four follow; the rest, always
	// including the last block (whose sequence hash is the caller's), go
	// through the scalar path.
	l[0] = hashTokens17to128(tokens[:16], k)
	chain = l[0]
	groups := (n - 2) / 4
	var sqp *uint64
	if sq != nil {
		sq[0] = chain
		sqp = &sq[1]
	}
	lo := hashBlocks64x4(&l[1], sqp, &tokens[stride], uintptr(stride)*unsafe.Sizeof(tokens[0]), uintptr(groups), keys, chain^baseKeys.bitflip1)
	chain = lo ^ baseKeys.bitflip1
	for i := 1 + 4*groups; i < n; i++ {
		l[i] = hashTokens17to128(tokens[i*stride:i*stride+16], k)
		if sq != nil && i < n-1 {
			chain = hash16(chain, l[i], &baseKeys)
			sq[i] = chain
		}
	}
	if sq == nil {
		return 0
	}
	return chain
}
