package core

import "math/bits"

// ChainStep returns the sequence hash of a block from the sequence hash of
// the block before it and the block's own local hash: XXH3-64 with
// BaseSeed over the 16 bytes LE64(parent) || LE64(local). The chain never
// uses the option-derived seed, so one prefix tree serves every adapter.
func ChainStep(parentSequenceHash, localHash uint64) uint64 {
	return hash16(parentSequenceHash, localHash, &baseKeys)
}

// SequenceHashes returns the sequence hash of every block: the first is
// the first local hash, each next one chains the previous with ChainStep.
func SequenceHashes(blockHashes []uint64) []uint64 {
	return AppendSequenceHashes(make([]uint64, 0, len(blockHashes)), blockHashes)
}

// AppendSequenceHashes appends the sequence hashes of blockHashes to dst.
// It does not allocate when dst has room for len(blockHashes) more values.
func AppendSequenceHashes(dst, blockHashes []uint64) []uint64 {
	if len(blockHashes) == 0 {
		return dst
	}
	seq := blockHashes[0]
	dst = append(dst, seq)
	// ChainStep written out so that the loop carries the parent already
	// keyed (seq ^ bitflip1) straight out of the avalanche: that takes
	// one operation off the path each step waits for.
	keyed := seq ^ baseKeys.bitflip1
	for _, local := range blockHashes[1:] {
		hi := local ^ baseKeys.bitflip2
		a := 16 + bits.ReverseBytes64(keyed) + hi + mulFold(keyed, hi)
		a ^= a >> 37
		a *= avalanche
		keyed = a ^ baseKeys.bitflip1 ^ a>>32
		dst = append(dst, a^a>>32)
	}
	return dst
}

// CommonPrefix returns how many leading hashes a and b share: for two
// chains of sequence hashes, the number of blocks of prefix they have in
// common. It compares several hashes a step (AVX2 where there is), as
// the index's own matches do.
func CommonPrefix(a, b []uint64) int { return commonPrefix(a, b) }
