package core

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
	for _, local := range blockHashes[1:] {
		seq = hash16(seq, local, &baseKeys)
		dst = append(dst, seq)
	}
	return dst
}
