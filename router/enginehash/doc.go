// Package enginehash computes the block ids that inference engines put in
// their own KV events, bit for bit, so that kvrouter can tell whether an
// engine's ids are deterministic and under which scheme and seed.
//
// The router's own index hashes with kvhash's canonical hash (core); this
// package exists only to reproduce what an engine publishes. Every scheme is a
// chain: a root digest (from a seed, a salt or a reuse scope), then one digest
// per full block from (parent digest, block tokens, extra keys). The 64-bit id
// on the wire is a fixed slice of the digest, which differs per engine:
//
//	scheme             digest of one block                                  wire id
//	vllm-sha256        SHA-256(pickle5((parent, tuple(tokens), extra|None)))  last 8 bytes, big-endian
//	vllm-sha256-cbor   SHA-256(canonical CBOR of the same)                    last 8 bytes, big-endian
//	vllm-xxhash        XXH3-128(pickle5(...)), 16-byte digests                last 8 bytes, big-endian
//	vllm-xxhash-cbor   XXH3-128(CBOR(...))                                    last 8 bytes, big-endian
//	sglang-sha256      SHA-256(parent digest || LE-u32 tokens)                first 8 bytes (signed i64 on the wire)
//	trtllm-v2-sha256   SHA-256(parent digest || LE-u64 tokens)                first 8 bytes
//
// Roots: vLLM's NONE_HASH is the scheme's own hash function applied to the
// seed string (PYTHONHASHSEED's value, or "vllm-none-hash" since vLLM's fix;
// a process without either draws 32 random bytes, which nobody can
// reproduce). SGLang has no root digest unless the request carries a cache
// salt (then SHA-256("sglang-cache-salt-v1\x00" || salt)). TensorRT-LLM's
// root is SHA-256 of its serialized reuse scope (LoRA id, salt id).
//
// To find which scheme and seed produced a root store, see Identify.
package enginehash
