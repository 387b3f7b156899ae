package enginehash

import "fmt"

// ExtraKind says what an extra key is; with ExtraKey.Tagged it fixes the
// Python value vLLM puts in a block's extra_keys tuple:
//
//	kind               untagged (vLLM up to 0.32)   tagged (vLLM 0.33)
//	ExtraLoRA          name                         ("lora", name, path)
//	ExtraMM            (identifier, offset)         ("mm", identifier, offset)
//	ExtraSalt          salt                         ("cache_salt", salt)
//	ExtraPromptEmbeds  digest (bytes)               ("prompt_embeds", digest)
//
// vLLM 0.33's KV events still carry the untagged form (its
// to_event_extra_keys strips the tags, and the LoRA path with them).
type ExtraKind uint8

const (
	// ExtraLoRA is the request's LoRA adapter, on every block.
	ExtraLoRA ExtraKind = iota + 1
	// ExtraMM is a multimodal item overlapping the block: its identifier and
	// its offset relative to the block's first token (negative when the item
	// started in an earlier block).
	ExtraMM
	// ExtraSalt is the request's cache salt, on the first block only.
	ExtraSalt
	// ExtraPromptEmbeds is the SHA-256 of the block's prompt-embeddings slice.
	ExtraPromptEmbeds
	// ExtraTRTLLMSaltID and ExtraTRTLLMLoRATask are not vLLM's: they carry
	// the ids TensorRT-LLM's v1_block_key mixes into a block (see
	// TRTLLMSaltIDKey, TRTLLMLoRATaskKey).
	ExtraTRTLLMSaltID
	ExtraTRTLLMLoRATask
)

// ExtraKey is one element of vLLM's per-block extra_keys tuple. Build them
// with LoRAKey, MMKey, SaltKey and PromptEmbedsKey (and Tag for vLLM 0.33),
// or per block from a whole request with VLLMExtras.
type ExtraKey struct {
	Kind   ExtraKind
	Tagged bool   // vLLM 0.33's tagged tuple form (see ExtraKind)
	Text   string // LoRA name, multimodal identifier or cache salt
	Path   string // ExtraLoRA, tagged form only: the adapter's path
	Offset int64  // ExtraMM only
	Bytes  []byte // ExtraPromptEmbeds only
	ID     uint64 // ExtraTRTLLMSaltID, ExtraTRTLLMLoRATask only
}

// LoRAKey is the LoRA adapter's name (untagged form).
func LoRAKey(name string) ExtraKey { return ExtraKey{Kind: ExtraLoRA, Text: name} }

// TaggedLoRAKey is vLLM 0.33's ("lora", name, path).
func TaggedLoRAKey(name, path string) ExtraKey {
	return ExtraKey{Kind: ExtraLoRA, Tagged: true, Text: name, Path: path}
}

// SaltKey is the request's cache salt (untagged form).
func SaltKey(salt string) ExtraKey { return ExtraKey{Kind: ExtraSalt, Text: salt} }

// MMKey is a multimodal item overlapping a block (untagged form): its
// identifier and its offset minus the block's start token index.
func MMKey(identifier string, offsetInBlock int64) ExtraKey {
	return ExtraKey{Kind: ExtraMM, Text: identifier, Offset: offsetInBlock}
}

// PromptEmbedsKey is the SHA-256 of the block's prompt embeddings (untagged).
func PromptEmbedsKey(digest []byte) ExtraKey { return ExtraKey{Kind: ExtraPromptEmbeds, Bytes: digest} }

// Tag returns k in vLLM 0.33's tagged form (a LoRA key keeps an empty path:
// set Path, which the events do not carry).
func (k ExtraKey) Tag() ExtraKey {
	k.Tagged = true
	return k
}

// The tags vLLM 0.33 puts first in each tagged key. They are constants in
// vLLM's code, hence interned str objects that CPython's pickle memoizes
// across keys: the encoder must know them.
const (
	tagLoRA         = "lora"
	tagMM           = "mm"
	tagSalt         = "cache_salt"
	tagPromptEmbeds = "prompt_embeds"
)

// maxEncodedString bounds strings and bytes in a hash input. CPython writes
// values of 64 KiB or more outside pickle frames; no real extra key comes near
// that, so this package refuses them rather than model the case.
const maxEncodedString = 64*1024 - 1

func (k ExtraKey) validate() error {
	var n int
	switch k.Kind {
	case ExtraLoRA:
		n = max(len(k.Text), len(k.Path))
	case ExtraMM, ExtraSalt:
		n = len(k.Text)
	case ExtraPromptEmbeds:
		n = len(k.Bytes)
	case ExtraTRTLLMSaltID, ExtraTRTLLMLoRATask:
		return fmt.Errorf("enginehash: a TensorRT-LLM v1 key in a vLLM block")
	default:
		return fmt.Errorf("enginehash: extra key of unknown kind %d", k.Kind)
	}
	if n > maxEncodedString {
		return fmt.Errorf("enginehash: extra key value of %d bytes (limit %d)", n, maxEncodedString)
	}
	return nil
}

func validateExtras(extra []ExtraKey) error {
	for i, k := range extra {
		if err := k.validate(); err != nil {
			return fmt.Errorf("extra key %d: %w", i, err)
		}
	}
	return nil
}
