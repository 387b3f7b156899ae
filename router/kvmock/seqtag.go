package kvmock

import "github.com/kvhash/kvhash/router/enginehash"

// SeqTag is what besides its tokens names a request's blocks in vLLM: the
// LoRA adapter it runs under and its cache salt. Both enter the block
// hash as extra keys, in vLLM's order: the LoRA name on every block, the
// salt on the first block only (vLLM up to 0.32's untagged keys, which its
// events carry in every release). The zero SeqTag is the base model, no
// salt: no extra keys.
type SeqTag struct {
	LoraName string
	LoraID   int // vLLM's lora_int_id (deprecated on the wire, still sent); 0 without LoRA
	Salt     string
}

// hashKeys are the extra keys of block i, as enginehash hashes them.
func (t SeqTag) hashKeys(i int) []enginehash.ExtraKey {
	var keys []enginehash.ExtraKey
	if t.LoraName != "" {
		keys = append(keys, enginehash.LoRAKey(t.LoraName))
	}
	if i == 0 && t.Salt != "" {
		keys = append(keys, enginehash.SaltKey(t.Salt))
	}
	return keys
}

// eventKeys are block i's entry of a BlockStored's extra_keys: the same
// keys as values, nil where vLLM sends None.
func (t SeqTag) eventKeys(i int) []string {
	var keys []string
	if t.LoraName != "" {
		keys = append(keys, t.LoraName)
	}
	if i == 0 && t.Salt != "" {
		keys = append(keys, t.Salt)
	}
	return keys
}

// hasKeys reports whether any block of the sequence has extra keys.
func (t SeqTag) hasKeys() bool { return t.LoraName != "" || t.Salt != "" }
