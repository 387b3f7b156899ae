package enginehash

import "fmt"

// Block is one full block of a chain: its digest and the id its engine
// publishes for it.
type Block struct {
	Digest Digest
	WireID uint64
}

// Chain hashes every full block of tokens under s, starting from root (a
// VLLMRoot, SGLangRoot or TRTLLMRoot digest), the way the engine hashes a
// prompt: a trailing partial block is not hashed (nor, with vLLM lookahead
// hashing, a block whose lookahead tokens are not all there yet). extras applies to vLLM
// schemes only (nil for none); the other engines' salts and LoRA ids are in
// their roots. The result is appended to dst.
func Chain(dst []Block, s Scheme, root Digest, tokens []uint32, blockSize int, extras *VLLMExtras) ([]Block, error) {
	if blockSize <= 0 {
		return dst, fmt.Errorf("enginehash: block size %d", blockSize)
	}
	if extras != nil && !s.IsVLLM() {
		return dst, fmt.Errorf("enginehash: %s takes no vLLM extra keys", s)
	}
	lookahead := 0
	if extras != nil {
		if err := extras.validate(); err != nil {
			return dst, err
		}
		lookahead = extras.Lookahead
	}
	var scratch [1024]byte
	buf := scratch[:0]
	var keys []ExtraKey
	mmIdx := 0
	parent := root
	// A block is hashed once its lookahead tokens exist too.
	for b, start := 0, 0; start+blockSize+lookahead <= len(tokens); b, start = b+1, start+blockSize {
		end := start + blockSize
		keys = keys[:0]
		var ahead []uint32
		if extras != nil {
			var err error
			if lookahead > 0 {
				keys, mmIdx, err = extras.lookaheadBlockKeys(keys, b, start, end, mmIdx)
				ahead = tokens[end : end+lookahead]
			} else {
				keys, mmIdx, err = extras.vllmBlockKeys(keys, b, start, end, mmIdx)
			}
			if err != nil {
				return dst, err
			}
		}
		d, nbuf, err := s.blockDigest(buf, parent, tokens[start:end], keys, ahead)
		if err != nil {
			return dst, fmt.Errorf("block %d: %w", b, err)
		}
		buf = nbuf
		dst = append(dst, Block{Digest: d, WireID: s.WireID(d)})
		parent = d
	}
	return dst, nil
}

// VLLMChain is Chain from vLLM's root for seed (DefaultVLLMSeed, or
// PYTHONHASHSEED's value): the block ids a vLLM engine started with that seed
// publishes for a prompt.
func VLLMChain(dst []Block, s Scheme, seed string, tokens []uint32, blockSize int, extras *VLLMExtras) ([]Block, error) {
	root, err := VLLMRoot(s, seed)
	if err != nil {
		return dst, err
	}
	return Chain(dst, s, root, tokens, blockSize, extras)
}
