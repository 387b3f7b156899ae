package enginehash

import "fmt"

// MMItem is one multimodal input of a vLLM request: its identifier (the
// mm_hash, or the identifier vLLM derives from it) and its placeholder
// position in the prompt.
type MMItem struct {
	Identifier string
	Offset     int // first placeholder token index in the prompt
	Length     int // placeholder tokens
}

// VLLMExtras is what of a vLLM request goes into its blocks' extra keys.
// The zero value means no extra keys (extra_keys None on every block).
type VLLMExtras struct {
	LoRAName  string   // on every block when set
	MM        []MMItem // sorted by Offset, as vLLM assumes
	CacheSalt string   // on the first block only (an empty salt is no salt)
	// PromptEmbedsDigests[i] is the SHA-256 of block i's prompt-embeddings
	// slice (vLLM hashes the tensor's raw bytes); nil without prompt embeds.
	PromptEmbedsDigests [][]byte
}

// vllmBlockKeys builds the extra keys of the block [start, end) in vLLM's
// order: LoRA name, multimodal (identifier, offset-start) pairs, cache salt,
// prompt-embeds digest. mmIdx is the multimodal cursor vLLM carries from one
// block to the next; the new cursor is returned. dst is reused.
func (x *VLLMExtras) vllmBlockKeys(dst []ExtraKey, block, start, end, mmIdx int) ([]ExtraKey, int, error) {
	dst = dst[:0]
	if x.LoRAName != "" {
		dst = append(dst, LoRAKey(x.LoRAName))
	}
	// vLLM's _gen_mm_extra_hash_keys, step for step (its early return when
	// every item ends before the block is the same as the loop finding none).
	for mmIdx < len(x.MM) {
		it := x.MM[mmIdx]
		if end <= it.Offset {
			break // the block has not reached this item
		}
		if start >= it.Offset+it.Length {
			mmIdx++ // the block is past this item
			continue
		}
		dst = append(dst, MMKey(it.Identifier, int64(it.Offset-start)))
		if end >= it.Offset+it.Length {
			mmIdx++ // the item ends here; the next may start in this block too
			continue
		}
		break
	}
	if start == 0 && x.CacheSalt != "" {
		dst = append(dst, SaltKey(x.CacheSalt))
	}
	if x.PromptEmbedsDigests != nil {
		if block >= len(x.PromptEmbedsDigests) {
			return nil, mmIdx, fmt.Errorf("enginehash: no prompt-embeds digest for block %d", block)
		}
		dst = append(dst, PromptEmbedsKey(x.PromptEmbedsDigests[block]))
	}
	return dst, mmIdx, nil
}

// BlockKeys returns the extra keys vLLM hashes into block i (block size
// blockSize) of a prompt, or nil where vLLM passes None.
func (x *VLLMExtras) BlockKeys(i, blockSize int) ([]ExtraKey, error) {
	if i < 0 || blockSize <= 0 {
		return nil, fmt.Errorf("enginehash: block %d of size %d", i, blockSize)
	}
	mmIdx := 0
	var keys []ExtraKey
	var err error
	// Replay the cursor from the first block, as vLLM's hasher does for a
	// prompt hashed in one call.
	for b := 0; b <= i; b++ {
		keys, mmIdx, err = x.vllmBlockKeys(keys, b, b*blockSize, (b+1)*blockSize, mmIdx)
		if err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}
