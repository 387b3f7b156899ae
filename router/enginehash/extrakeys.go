package enginehash

import "fmt"

// ExtraKind says which Python type an extra key has in vLLM's hash input.
type ExtraKind uint8

const (
	// ExtraString is a str: a LoRA name or a cache salt.
	ExtraString ExtraKind = iota + 1
	// ExtraMM is a (str, int) tuple: a multimodal item's identifier and its
	// offset relative to the block's first token (negative when the item
	// started in an earlier block).
	ExtraMM
	// ExtraBytes is a bytes value: the SHA-256 of a block's prompt embeddings.
	ExtraBytes
)

// ExtraKey is one element of vLLM's per-block extra_keys tuple. Build them
// with LoRAKey, MMKey, SaltKey and PromptEmbedsKey, or per block from a whole
// request with VLLMExtras.BlockKeys.
type ExtraKey struct {
	Kind   ExtraKind
	Text   string // ExtraString: the value; ExtraMM: the identifier
	Offset int64  // ExtraMM only
	Bytes  []byte // ExtraBytes only
}

// LoRAKey is the LoRA adapter's name, on every block of a LoRA request.
func LoRAKey(name string) ExtraKey { return ExtraKey{Kind: ExtraString, Text: name} }

// SaltKey is the request's cache salt (vLLM puts it on the first block only).
func SaltKey(salt string) ExtraKey { return ExtraKey{Kind: ExtraString, Text: salt} }

// MMKey is a multimodal item overlapping a block: its identifier (vLLM's
// mm_hash / identifier) and its offset minus the block's start token index.
func MMKey(identifier string, offsetInBlock int64) ExtraKey {
	return ExtraKey{Kind: ExtraMM, Text: identifier, Offset: offsetInBlock}
}

// PromptEmbedsKey is the SHA-256 of the block's slice of prompt embeddings.
func PromptEmbedsKey(digest []byte) ExtraKey { return ExtraKey{Kind: ExtraBytes, Bytes: digest} }

// maxEncodedString bounds strings and bytes in a hash input. CPython writes
// values of 64 KiB or more outside pickle frames; no real extra key comes near
// that, so this package refuses them rather than model the case.
const maxEncodedString = 64*1024 - 1

func (k ExtraKey) validate() error {
	switch k.Kind {
	case ExtraString, ExtraMM:
		if len(k.Text) > maxEncodedString {
			return fmt.Errorf("enginehash: extra key string of %d bytes (limit %d)", len(k.Text), maxEncodedString)
		}
	case ExtraBytes:
		if len(k.Bytes) > maxEncodedString {
			return fmt.Errorf("enginehash: extra key bytes of %d bytes (limit %d)", len(k.Bytes), maxEncodedString)
		}
	default:
		return fmt.Errorf("enginehash: extra key of unknown kind %d", k.Kind)
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
