package kvmock

import (
	"crypto/rand"
	"fmt"

	"github.com/kvhash/kvhash/router/enginehash"
)

// vllmIDs is vLLM's prefix-caching hash for one algorithm and root,
// computed by router/enginehash (kvmock never serializes or hashes blocks
// itself, so its ids are the ones that package is checked to compute).
type vllmIDs struct {
	scheme enginehash.Scheme
	root   Digest
}

func (v vllmIDs) Root() Digest { return v.root }

func (v vllmIDs) Next(parent Digest, tokens []uint32, extra []enginehash.ExtraKey) (Digest, error) {
	return v.scheme.BlockDigest(parent, tokens, extra)
}

// parseHashAlgo accepts vLLM's --prefix-caching-hash-algo names (sha256,
// sha256_cbor, xxhash, xxhash_cbor) and enginehash's scheme names.
func parseHashAlgo(name string) (enginehash.Scheme, error) {
	s, err := enginehash.ParseScheme(name)
	if err != nil || !s.IsVLLM() {
		return "", fmt.Errorf("hash algo %q: want one of vLLM's sha256, sha256_cbor, xxhash, xxhash_cbor", name)
	}
	return s, nil
}

// NewBlockIDs returns the block namer cfg asks for: vLLM's chain under
// cfg.HashAlgo, rooted at NONE_HASH = hash(cfg.HashSeed) (what vLLM does
// with PYTHONHASHSEED set, or since its fix with the default seed), or with
// cfg.Unstable at 32 random bytes drawn now (what vLLM does without a seed:
// every process start renames every block).
func NewBlockIDs(cfg Config) (BlockIDs, error) {
	s, err := parseHashAlgo(cfg.HashAlgo)
	if err != nil {
		return nil, err
	}
	if cfg.Unstable {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("random root: %w", err)
		}
		root, err := enginehash.DigestFromBytes(b[:])
		if err != nil {
			return nil, fmt.Errorf("random root: %w", err)
		}
		return vllmIDs{scheme: s, root: root}, nil
	}
	root, err := enginehash.VLLMRoot(s, cfg.HashSeed)
	if err != nil {
		return nil, fmt.Errorf("root for seed %q: %w", cfg.HashSeed, err)
	}
	return vllmIDs{scheme: s, root: root}, nil
}
