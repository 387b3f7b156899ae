package kvmock

import (
	"fmt"

	"github.com/kvhash/kvhash/router/enginehash"
)

// BlockIDs names blocks the way the simulated engine's hash algorithm does:
// a chain from a root digest, each block's digest over its parent's digest,
// its own tokens and its extra keys (vLLM's prefix-caching hash).
type BlockIDs interface {
	// Root is the parent digest of a sequence's first block (vLLM's NONE_HASH).
	Root() Digest
	// Next is the digest of the block holding tokens after parent.
	Next(parent Digest, tokens []uint32, extra []enginehash.ExtraKey) (Digest, error)
}

// appendChain appends the digests of tokens' full blocks to dst, chained
// from the root, with tag's extra keys. Tokens after the last full block
// are ignored.
func appendChain(dst []Digest, ids BlockIDs, tag SeqTag, tokens []uint32, blockSize int) ([]Digest, error) {
	parent := ids.Root()
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		var err error
		parent, err = ids.Next(parent, tokens[i:i+blockSize], tag.hashKeys(i/blockSize))
		if err != nil {
			return dst, fmt.Errorf("block id of block %d: %w", i/blockSize, err)
		}
		dst = append(dst, parent)
	}
	return dst, nil
}
