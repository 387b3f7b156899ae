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
//	trtllm-v1-block-key  64-bit mix of length, parent key, tokens, LoRA id    the key itself
//
// vLLM's extra keys (LoRA, multimodal items, cache salt, prompt-embeds
// digest) come in two forms: bare values up to 0.32, tagged tuples in 0.33
// (see ExtraKind); 0.33 can also hash lookahead tokens after each block
// (LookaheadBlockDigest). Its events carry the bare form either way.
//
// Roots: vLLM's NONE_HASH is the scheme's own hash function applied to the
// seed string (PYTHONHASHSEED's value, or "vllm-none-hash" since vLLM's fix;
// a process without either draws 32 random bytes, which nobody can
// reproduce). SGLang has no root digest unless the request carries a cache
// salt (then SHA-256("sglang-cache-salt-v1\x00" || salt)). TensorRT-LLM
// v2's root is SHA-256 of its serialized reuse scope (LoRA id, salt id); v1's
// is the key 0, with the salt id mixed into the first block.
//
// To find which scheme and seed produced a root store, see Verifier: it
// tries a list of candidates (DefaultCandidates is what `engine_hash: auto`
// should try) and returns those that reproduce the engine's id. No match
// under any deterministic candidate is what a random root looks like.
//
// Everything here is checked bit for bit against testdata/oracle.py
// (CPython's pickle, cbor2, hashlib, xxhash), and the vLLM vectors against
// vLLM 0.33's own kv_cache_utils.py (make enginehash-vllm-check).
package enginehash
