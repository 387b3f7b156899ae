package enginehash

import (
	"encoding/binary"
	"fmt"
)

// TensorRT-LLM's default block key, kv_cache_hash_algo v1_block_key: a
// 64-bit mix (no cryptographic hash) of the block's length, its parent's
// key, each token and the LoRA task id; the root's parent key is 0. Its
// "digest" here is the 64-bit key itself (8 bytes, big-endian), which is
// also the id in its events. The constants and mixing steps are those of
// TensorRT-LLM's kv_cache_hash.hash_v1_block_key, itself bit-exact with the
// C++ BlockKeyHasher. A cache salt is mixed in at the root as
// get_cache_salt_id(salt); note that TensorRT-LLM's V1 C++ KV cache manager
// uses std::hash of the salt instead (not reproducible), so salted v1 ids
// match only engines on KV cache manager V2.

const (
	v1Hash32Const      = 0x45d9f3b
	v1Hash64Const1     = 0xbf58476d1ce4e5b9
	v1Hash64Const2     = 0x94d049bb133111eb
	v1HashCombineConst = 0x9e3779b9
	v1ParentHashConst  = 0xbf58476d1ce4e5b9
)

// TRTLLMV1Root is v1_block_key's root: parent key 0.
func TRTLLMV1Root() Digest { return Digest{n: 8} }

// TRTLLMSaltIDKey is the salt id (TRTLLMSaltID of the cache salt) that
// v1_block_key mixes into a root block.
func TRTLLMSaltIDKey(id uint64) ExtraKey { return ExtraKey{Kind: ExtraTRTLLMSaltID, ID: id} }

// TRTLLMLoRATaskKey is the LoRA task id v1_block_key mixes into every block.
func TRTLLMLoRATaskKey(id uint64) ExtraKey { return ExtraKey{Kind: ExtraTRTLLMLoRATask, ID: id} }

func v1Hash32Mix(value uint32, seed uint64) uint64 {
	v := value
	v = ((v >> 16) ^ v) * v1Hash32Const
	v = ((v >> 16) ^ v) * v1Hash32Const
	v = (v >> 16) ^ v
	v += v1HashCombineConst // wraps in 32 bits, as the C++ uint32_t sum does
	return seed ^ (uint64(v) + seed<<6 + seed>>2)
}

func v1Hash64Mix(value, seed uint64) uint64 {
	v := value
	v = (v ^ (v >> 30)) * v1Hash64Const1
	v = (v ^ (v >> 27)) * v1Hash64Const2
	v = v ^ (v >> 31)
	return seed ^ (v + v1HashCombineConst + seed<<6 + seed>>2)
}

// trtllmV1Digest hashes one block from its parent key. extra may hold one
// TRTLLMSaltIDKey (used on a root block only, as TensorRT-LLM does) and one
// TRTLLMLoRATaskKey.
func trtllmV1Digest(parent Digest, tokens []uint32, extra []ExtraKey) (Digest, error) {
	if parent.n != 8 {
		return Digest{}, fmt.Errorf("enginehash: %s chains on 8-byte keys (use TRTLLMV1Root), got %d bytes", TRTLLMV1BlockKey, parent.n)
	}
	var salt, lora *uint64
	for i := range extra {
		switch extra[i].Kind {
		case ExtraTRTLLMSaltID:
			salt = &extra[i].ID
		case ExtraTRTLLMLoRATask:
			lora = &extra[i].ID
		default:
			return Digest{}, fmt.Errorf("enginehash: %s takes only its salt id and LoRA task id as extra keys", TRTLLMV1BlockKey)
		}
	}
	parentKey := binary.BigEndian.Uint64(parent.b[:8])
	seed := uint64(len(tokens)) ^ parentKey*v1ParentHashConst
	if parentKey == 0 && salt != nil {
		seed = v1Hash64Mix(*salt, seed)
	}
	for _, t := range tokens {
		seed = v1Hash32Mix(t, seed)
	}
	if lora != nil {
		seed = v1Hash64Mix(*lora, seed)
	}
	d := Digest{n: 8}
	binary.BigEndian.PutUint64(d.b[:8], seed)
	return d, nil
}

// TRTLLMV1Chain is Chain for v1_block_key: every full block of tokens from
// the root, with an optional salt id (TRTLLMSaltID of the request's cache
// salt) and LoRA task id.
func TRTLLMV1Chain(dst []Block, tokens []uint32, blockSize int, saltID, loraTaskID *uint64) ([]Block, error) {
	if blockSize <= 0 {
		return dst, fmt.Errorf("enginehash: block size %d", blockSize)
	}
	var keys [2]ExtraKey
	parent := TRTLLMV1Root()
	for start := 0; start+blockSize <= len(tokens); start += blockSize {
		extra := keys[:0]
		if saltID != nil && start == 0 {
			extra = append(extra, TRTLLMSaltIDKey(*saltID))
		}
		if loraTaskID != nil {
			extra = append(extra, TRTLLMLoRATaskKey(*loraTaskID))
		}
		d, err := trtllmV1Digest(parent, tokens[start:start+blockSize], extra)
		if err != nil {
			return dst, err
		}
		dst = append(dst, Block{Digest: d, WireID: d.firstU64BE()})
		parent = d
	}
	return dst, nil
}
