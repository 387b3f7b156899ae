package kvmock

import "fmt"

// BlockIDs names blocks the way the simulated engine's hash algorithm does:
// a chain from a root digest, each block's digest over its parent's digest
// and its own tokens (vLLM's prefix-caching hash, without extra keys:
// kvmock has no LoRA, multimodal inputs or cache salts).
type BlockIDs interface {
	// Root is the parent digest of a sequence's first block (vLLM's NONE_HASH).
	Root() Digest
	// Next is the digest of the block holding tokens after parent.
	Next(parent Digest, tokens []uint32) (Digest, error)
}

// appendChain appends the digests of tokens' full blocks to dst, chained
// from parent. Tokens after the last full block are ignored.
func appendChain(dst []Digest, ids BlockIDs, parent Digest, tokens []uint32, blockSize int) ([]Digest, error) {
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		var err error
		parent, err = ids.Next(parent, tokens[i:i+blockSize])
		if err != nil {
			return dst, fmt.Errorf("block id of block %d: %w", i/blockSize, err)
		}
		dst = append(dst, parent)
	}
	return dst, nil
}
