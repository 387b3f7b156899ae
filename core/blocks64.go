package core

import "math/bits"

// The 16-token block loop: the most common block size, hashed with its
// sequence chain in one pass. hashBlocks64B (per architecture, in
// blocks64_*.go) runs an assembly version where there is one and
// hashBlocks64BGo, below, elsewhere. Every version computes exactly what
// hashBlocks64BGo computes; tests and fuzz targets hold them to it and to
// xxh3.HashSeed.

// hashBlocks64BGo sets l[i] to XXH3-64 of the 16 tokens at tokens[i*stride:]
// (64 bytes: the most common block size, unrolled) and, when sq is not
// nil, sq[i] to the sequence hash of all but the last block, returning the
// last sequence hash it set for the caller to extend. The sequence chain
// runs one block behind the hashing: a chain step must wait for the one
// before it, and issuing it after the next block lets the processor
// overlap that wait with independent work. It loops itself rather than
// being called per block because on WebAssembly, where Go passes
// arguments through memory, a call costs about as much as the hash.
func hashBlocks64BGo(l, sq []uint64, tokens []uint32, stride int, k *seededKeys) (chain uint64) {
	for i := range l {
		t := tokens[i*stride : i*stride+16]
		acc := len64Acc
		acc += mulFold(pair(t, 0)^k.mix[0], pair(t, 2)^k.mix[1])
		acc += mulFold(pair(t, 12)^k.mix[2], pair(t, 14)^k.mix[3])
		acc += mulFold(pair(t, 4)^k.mix[4], pair(t, 6)^k.mix[5])
		acc += mulFold(pair(t, 8)^k.mix[6], pair(t, 10)^k.mix[7])
		l[i] = finalize(acc)
		if sq != nil && i > 0 {
			if i == 1 {
				chain = l[0]
			} else {
				// hash16(chain, l[i-1]), written out: on WebAssembly,
				// where Mul64 and ReverseBytes64 are not instructions, it
				// is over Go's inlining budget, and a call per block would
				// cost as much as the step.
				lo, hi := chain^baseKeys.bitflip1, l[i-1]^baseKeys.bitflip2
				chain = finalize(16 + bits.ReverseBytes64(lo) + hi + mulFold(lo, hi))
			}
			sq[i-1] = chain
		}
	}
	return chain
}
