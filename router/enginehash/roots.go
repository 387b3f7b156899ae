package enginehash

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// DefaultVLLMSeed is the seed vLLM derives NONE_HASH from when PYTHONHASHSEED
// is unset and the algorithm is SHA-256 based (vLLM's DEFAULT_NONE_HASH_SEED,
// since its fix; before it, and for xxhash schemes still, an unset
// PYTHONHASHSEED means 32 random bytes).
const DefaultVLLMSeed = "vllm-none-hash"

// VLLMRoot is vLLM's NONE_HASH for scheme s and seed string seed:
// hash_fn(seed), the scheme's own function applied to the str (pickled for
// sha256/xxhash, CBOR text for the _cbor variants). seed is PYTHONHASHSEED's
// value exactly as set ("0", "42", ...) or DefaultVLLMSeed.
func VLLMRoot(s Scheme, seed string) (Digest, error) {
	if !s.IsVLLM() {
		return Digest{}, fmt.Errorf("enginehash: VLLMRoot needs a vLLM scheme, got %q", string(s))
	}
	if len(seed) > maxEncodedString {
		return Digest{}, fmt.Errorf("enginehash: seed of %d bytes (limit %d)", len(seed), maxEncodedString)
	}
	var scratch [128]byte
	var buf []byte
	switch s {
	case VLLMSHA256, VLLMXXHash:
		buf = appendPickleString(scratch[:0], seed)
	default:
		buf = appendCBORText(scratch[:0], seed)
	}
	return s.sum(buf), nil
}

// sglangSaltTag is the domain separator SGLang hashes before a cache salt.
const sglangSaltTag = "sglang-cache-salt-v1\x00"

// SGLangRoot is the parent digest of a request's first page: none (the zero
// Digest) without a cache salt, else SHA-256("sglang-cache-salt-v1\0" || salt).
// SGLang treats an empty salt as no salt.
func SGLangRoot(cacheSalt string) Digest {
	if cacheSalt == "" {
		return Digest{}
	}
	h := sha256.New()
	h.Write([]byte(sglangSaltTag))
	h.Write([]byte(cacheSalt))
	var d Digest
	d.n = 32
	h.Sum(d.b[:0])
	return d
}

// TRTLLMSaltID is TensorRT-LLM's get_cache_salt_id: the first 8 bytes of
// SHA-256(salt), read little-endian.
func TRTLLMSaltID(cacheSalt string) uint64 {
	sum := sha256.Sum256([]byte(cacheSalt))
	return binary.LittleEndian.Uint64(sum[:8])
}

// TRTLLMScope is TensorRT-LLM's ReuseScope: the namespace at the root of its
// v2 block tree. Nil fields are absent.
type TRTLLMScope struct {
	LoRAID *uint64
	SaltID *uint64 // TRTLLMSaltID(cache_salt) when the request has a salt
}

// TRTLLMRoot is the root key of TensorRT-LLM's v2 block tree: SHA-256 of the
// scope's bytes, a presence mask byte (bit 0 LoRA id, bit 1 salt) followed by
// each present field as a little-endian u64.
func TRTLLMRoot(scope TRTLLMScope) Digest {
	var buf [17]byte
	n := 1
	if scope.LoRAID != nil {
		buf[0] |= 1
		binary.LittleEndian.PutUint64(buf[n:], *scope.LoRAID)
		n += 8
	}
	if scope.SaltID != nil {
		buf[0] |= 2
		binary.LittleEndian.PutUint64(buf[n:], *scope.SaltID)
		n += 8
	}
	return sha256Digest(sha256.Sum256(buf[:n]))
}
