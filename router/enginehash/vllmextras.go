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

// VLLMExtras is what of a vLLM request goes into its blocks' extra keys, and
// how. The zero value means no extra keys (extra_keys None on every block).
type VLLMExtras struct {
	LoRAName  string   // on every block when set
	LoRAPath  string   // hashed only in the tagged form (vLLM 0.33)
	MM        []MMItem // sorted by Offset, as vLLM assumes
	CacheSalt string   // on the first block only (an empty salt is no salt)
	// PromptEmbedsDigests[i] is the SHA-256 of block i's prompt-embeddings
	// slice (vLLM hashes the tensor's raw bytes); nil without prompt embeds.
	PromptEmbedsDigests [][]byte
	// Tagged selects vLLM 0.33's tagged keys ("lora", name, path) ... instead
	// of the bare values earlier releases hash. Without extra keys both
	// forms hash the same.
	Tagged bool
	// Lookahead is vLLM 0.33's num_hash_lookahead_tokens: each block's hash
	// also covers that many tokens after it (so the last blocks of a prompt
	// wait for them). Not combinable with prompt embeds.
	Lookahead int
}

func (x *VLLMExtras) validate() error {
	if x.Lookahead < 0 {
		return fmt.Errorf("enginehash: lookahead %d", x.Lookahead)
	}
	if x.Lookahead > 0 && x.PromptEmbedsDigests != nil {
		return fmt.Errorf("enginehash: lookahead hashing with prompt embeds is not modelled (vLLM hashes embeds over the widened window)")
	}
	return nil
}

// vllmBlockKeys builds the extra keys vLLM hashes for tokens [start, end)
// of block number block, in vLLM's order: LoRA, multimodal items, cache
// salt, prompt-embeds digest. mmIdx is the multimodal cursor vLLM carries
// from one block to the next; the new cursor is returned. dst is reused.
func (x *VLLMExtras) vllmBlockKeys(dst []ExtraKey, block, start, end, mmIdx int) ([]ExtraKey, int, error) {
	dst = dst[:0]
	if x.LoRAName != "" {
		dst = append(dst, ExtraKey{Kind: ExtraLoRA, Tagged: x.Tagged, Text: x.LoRAName, Path: x.LoRAPath})
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
		dst = append(dst, ExtraKey{Kind: ExtraMM, Tagged: x.Tagged, Text: it.Identifier, Offset: int64(it.Offset - start)})
		if end >= it.Offset+it.Length {
			mmIdx++ // the item ends here; the next may start in this block too
			continue
		}
		break
	}
	if start == 0 && x.CacheSalt != "" {
		dst = append(dst, ExtraKey{Kind: ExtraSalt, Tagged: x.Tagged, Text: x.CacheSalt})
	}
	if x.PromptEmbedsDigests != nil {
		if block >= len(x.PromptEmbedsDigests) {
			return nil, mmIdx, fmt.Errorf("enginehash: no prompt-embeds digest for block %d", block)
		}
		dst = append(dst, ExtraKey{Kind: ExtraPromptEmbeds, Tagged: x.Tagged, Bytes: x.PromptEmbedsDigests[block]})
	}
	return dst, mmIdx, nil
}

// lookaheadBlockKeys is vLLM's generate_lookahead_block_hash_extra_keys: the
// keys of the widened window [start, end+Lookahead), then the multimodal
// cursor rewound to the first item still open at end, so that the next
// block sees it again.
func (x *VLLMExtras) lookaheadBlockKeys(dst []ExtraKey, block, start, end, mmIdx int) ([]ExtraKey, int, error) {
	dst, mmIdx, err := x.vllmBlockKeys(dst, block, start, end+x.Lookahead, mmIdx)
	if err != nil {
		return dst, mmIdx, err
	}
	for mmIdx > 0 {
		prev := x.MM[mmIdx-1]
		if prev.Offset+prev.Length <= end {
			break
		}
		mmIdx--
	}
	return dst, mmIdx, nil
}

// BlockKeys returns the extra keys vLLM hashes into block i (block size
// blockSize) of a prompt, or nil where vLLM passes None. With Lookahead,
// these are the keys before the lookahead tokens are appended.
func (x *VLLMExtras) BlockKeys(i, blockSize int) ([]ExtraKey, error) {
	if i < 0 || blockSize <= 0 {
		return nil, fmt.Errorf("enginehash: block %d of size %d", i, blockSize)
	}
	if err := x.validate(); err != nil {
		return nil, err
	}
	mmIdx := 0
	var keys []ExtraKey
	var err error
	// Replay the cursor from the first block, as vLLM's hasher does for a
	// prompt hashed in one call.
	for b := 0; b <= i; b++ {
		start, end := b*blockSize, (b+1)*blockSize
		if x.Lookahead > 0 {
			keys, mmIdx, err = x.lookaheadBlockKeys(keys, b, start, end, mmIdx)
		} else {
			keys, mmIdx, err = x.vllmBlockKeys(keys, b, start, end, mmIdx)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}
