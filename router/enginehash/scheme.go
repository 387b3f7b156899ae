package enginehash

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Scheme names one engine's block hash: its serialization, hash function and
// the slice of the digest it publishes.
type Scheme string

// The schemes this package reproduces. The names are what kvrouter's config
// and verdicts use.
const (
	VLLMSHA256     Scheme = "vllm-sha256"      // --prefix-caching-hash-algo sha256 (vLLM's default)
	VLLMSHA256CBOR Scheme = "vllm-sha256-cbor" // --prefix-caching-hash-algo sha256_cbor
	VLLMXXHash     Scheme = "vllm-xxhash"      // --prefix-caching-hash-algo xxhash
	VLLMXXHashCBOR Scheme = "vllm-xxhash-cbor" // --prefix-caching-hash-algo xxhash_cbor
	SGLangSHA256   Scheme = "sglang-sha256"    // SGLang's radix cache / HiCache page hash
	TRTLLMV2SHA256 Scheme = "trtllm-v2-sha256" // TensorRT-LLM kv_cache_hash_algo v2_sha256
	// TRTLLMV1BlockKey is TensorRT-LLM's default kv_cache_hash_algo,
	// v1_block_key: a 64-bit mix, deterministic for a given build.
	TRTLLMV1BlockKey Scheme = "trtllm-v1-block-key"
)

// Schemes lists every scheme, deterministic-by-default ones first.
func Schemes() []Scheme {
	return []Scheme{VLLMSHA256, VLLMSHA256CBOR, SGLangSHA256, TRTLLMV2SHA256, TRTLLMV1BlockKey, VLLMXXHash, VLLMXXHashCBOR}
}

// ParseScheme accepts a scheme name, also in vLLM's own spelling
// ("sha256_cbor") with a "vllm-" prefix implied, and "_" for "-".
func ParseScheme(name string) (Scheme, error) {
	norm := make([]byte, 0, len(name)+5)
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			c = '-'
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		norm = append(norm, c)
	}
	s := Scheme(norm)
	for _, known := range Schemes() {
		if s == known || "vllm-"+s == known {
			return known, nil
		}
	}
	return "", fmt.Errorf("enginehash: unknown scheme %q (known: %v)", name, Schemes())
}

// IsVLLM reports whether s is one of vLLM's four algorithms.
func (s Scheme) IsVLLM() bool {
	switch s {
	case VLLMSHA256, VLLMSHA256CBOR, VLLMXXHash, VLLMXXHashCBOR:
		return true
	}
	return false
}

// RandomRootByDefault reports whether an engine running s without
// PYTHONHASHSEED draws a random root per process, even after vLLM's fix
// (which only fixed the SHA-256 schemes' default seed).
func (s Scheme) RandomRootByDefault() bool {
	return s == VLLMXXHash || s == VLLMXXHashCBOR
}

func (s Scheme) valid() error {
	for _, known := range Schemes() {
		if s == known {
			return nil
		}
	}
	return fmt.Errorf("enginehash: unknown scheme %q", string(s))
}

// ErrNoParent is returned when a vLLM or TensorRT-LLM block is hashed without
// a parent digest: those chains always start from a root digest.
var ErrNoParent = errors.New("enginehash: this scheme needs a parent digest (use its root)")

// WireID is the 64-bit block id the engine publishes for digest d: the last
// 8 bytes big-endian for vLLM (int.from_bytes(d, "big") & (2**64-1)), the
// first 8 bytes big-endian for SGLang and TensorRT-LLM (SGLang sends them as
// a signed i64: the same 64 bits; see SignedWireID).
func (s Scheme) WireID(d Digest) uint64 {
	if s.IsVLLM() {
		return d.lastU64BE()
	}
	return d.firstU64BE()
}

// SignedWireID is WireID as the signed i64 SGLang and TensorRT-LLM events
// carry (vLLM's ids are unsigned: convert with uint64 to compare).
func SignedWireID(id uint64) int64 { return int64(id) }

// BlockDigest hashes one block under s: its parent digest (a root for the
// first block), its tokens and, for vLLM, its extra keys (for TensorRT-LLM
// v1, its salt id and LoRA task id keys). SGLang's unsalted first block
// takes the zero Digest as parent. Extra keys are refused by the schemes
// that fold them into the root (SGLang, TensorRT-LLM v2): silently dropping
// them would give a wrong id that looks right.
func (s Scheme) BlockDigest(parent Digest, tokens []uint32, extra []ExtraKey) (Digest, error) {
	var scratch [512]byte
	d, _, err := s.blockDigest(scratch[:0], parent, tokens, extra, nil)
	return d, err
}

// LookaheadBlockDigest is BlockDigest for a vLLM engine hashing with
// lookahead tokens (vLLM 0.33, num_hash_lookahead_tokens L > 0, e.g. for
// its drafter): the hashed keys become (extra or None, *lookahead), where
// lookahead are the L tokens after the block (an event's
// lookahead_token_ids entry) and extra covers the block and those tokens.
func (s Scheme) LookaheadBlockDigest(parent Digest, tokens []uint32, extra []ExtraKey, lookahead []uint32) (Digest, error) {
	var scratch [512]byte
	d, _, err := s.blockDigest(scratch[:0], parent, tokens, extra, lookahead)
	return d, err
}

// blockDigest is LookaheadBlockDigest with a reusable serialization buffer,
// returned (possibly grown) for the next block.
func (s Scheme) blockDigest(buf []byte, parent Digest, tokens []uint32, extra []ExtraKey, lookahead []uint32) (Digest, []byte, error) {
	if err := s.valid(); err != nil {
		return Digest{}, buf, err
	}
	if s.IsVLLM() {
		if parent.IsZero() {
			return Digest{}, buf, ErrNoParent
		}
		if err := validateExtras(extra); err != nil {
			return Digest{}, buf, err
		}
		switch s {
		case VLLMSHA256, VLLMXXHash:
			buf = appendPickleBlock(buf[:0], parent.Bytes(), tokens, extra, lookahead)
		default:
			buf = appendCBORBlock(buf[:0], parent.Bytes(), tokens, extra, lookahead)
		}
		return s.sum(buf), buf, nil
	}
	if len(lookahead) != 0 {
		return Digest{}, buf, fmt.Errorf("enginehash: %s has no lookahead hashing", s)
	}
	if s == TRTLLMV1BlockKey {
		d, err := trtllmV1Digest(parent, tokens, extra)
		return d, buf, err
	}
	if len(extra) != 0 {
		return Digest{}, buf, fmt.Errorf("enginehash: %s takes no per-block extra keys (its salt and LoRA live in the root)", s)
	}
	switch s {
	case SGLangSHA256:
		buf = buf[:0]
		if !parent.IsZero() {
			buf = append(buf, parent.Bytes()...)
		}
		for _, t := range tokens {
			buf = append(buf, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
		}
	case TRTLLMV2SHA256:
		if parent.IsZero() {
			return Digest{}, buf, ErrNoParent
		}
		buf = append(buf[:0], parent.Bytes()...)
		for _, t := range tokens {
			buf = append(buf, byte(t), byte(t>>8), byte(t>>16), byte(t>>24), 0, 0, 0, 0)
		}
	}
	return sha256Digest(sha256.Sum256(buf)), buf, nil
}

// sum is the scheme's hash function over serialized bytes.
func (s Scheme) sum(b []byte) Digest {
	if s == VLLMXXHash || s == VLLMXXHashCBOR {
		// xxhash.xxh3_128_digest: XXH3-128 with seed 0, big-endian (high
		// half first), which is what Uint128.Bytes returns.
		return xxh128Digest(xxh3.Hash128(b).Bytes())
	}
	return sha256Digest(sha256.Sum256(b))
}
