// Package kvmock is an engine simulator that behaves toward a KV-aware
// router as a vLLM engine does, so that kvrouter (or any router) can be
// run, tested and demonstrated without GPUs. cmd/kvmock is its command.
//
// # What a router sees
//
// HTTP, vLLM's OpenAI-compatible shapes:
//
//	POST /v1/completions       prompt as token ids, text, or a list of one of either
//	                           (batches of several are refused); max_tokens; n = 1;
//	                           stream with SSE chunks and "data: [DONE]";
//	                           stream_options.include_usage for a final usage chunk
//	POST /v1/chat/completions  messages through the chat template below
//	POST /tokenize             {"model","prompt"} or {"model","messages"};
//	                           add_special_tokens (default true for prompts, false
//	                           for messages), add_generation_prompt,
//	                           continue_final_message; answers {"count",
//	                           "max_model_len","tokens","token_strs"}
//	GET  /health, GET /v1/models, POST /reset_prefix_cache (AllBlocksCleared)
//	GET  /metrics              vLLM's Prometheus names: vllm:num_requests_running,
//	                           _waiting, vllm:kv_cache_usage_perc,
//	                           vllm:prefix_cache_queries_total / _hits_total (tokens),
//	                           vllm:time_to_first_token_seconds, ...
//	GET  /kvmock/stats         kvmock's own: running, waiting, cache, counters
//	POST /kvmock/health        {"healthy": false} makes /health answer 503 (a sick
//	                           engine that keeps its cache), true restores it
//
// Errors are OpenAI JSON ({"error":{"message","type","param","code"}});
// an unknown model name is a 404, as in vLLM. Every generation reports
// usage.prompt_tokens_details.cached_tokens (vLLM does with
// --enable-prompt-tokens-details) and kvmock's simulated timings, in the
// body's "kvmock" object (streams: in the usage chunk) and in X-Kvmock-*
// headers, which a stream sends with its first token so that a proxy
// copying headers passes them on.
//
// KV events, vLLM's ZmqEventPublisher: a PUB socket that binds when the
// endpoint has "*", "::", ipc:// or inproc:// and connects otherwise;
// three frames per message (topic, seq as 8 bytes big-endian from 0,
// MessagePack payload); one batch [ts, events, data_parallel_rank] per
// scheduler step; events as maps tagged "type" (vLLM >= 0.24) or positional
// arrays (older vLLM, every field written as msgspec does); hashes as
// unsigned ints (the digest's last 8 bytes, big-endian) or as the whole
// digest in bytes; an optional ROUTER replay endpoint that keeps the last N
// batches and answers in vLLM >= 0.26's four-frame shape or the older
// three-frame one. One process is one data-parallel rank (--dp-rank sets
// the rank its batches carry; run one kvmock per rank on offset ports).
//
// Block ids are vLLM's own, computed by router/enginehash: the chain of
// --prefix-caching-hash-algo (sha256_cbor by default; sha256, xxhash,
// xxhash_cbor too) from NONE_HASH = hash(seed), or, with Unstable, from 32
// random bytes drawn at start (vLLM without PYTHONHASHSEED). A request
// naming one of Config.LoRAModules runs under that adapter and a request's
// cache_salt salts it: both are extra keys of the hash, as in vLLM (the
// LoRA name on every block, the salt on the first; vLLM up to 0.32's
// untagged form), and the events carry lora_name, lora_id and extra_keys.
// Multimodal inputs and prompt embeddings are not modelled.
//
// # The engine model
//
// The engine is router/engine's model of a vLLM V1 engine, the one the
// simulator runs too, here on a real clock: a driver goroutine runs a
// scheduler step, sleeps its simulated duration divided by Speedup, then
// delivers the step's KV events and tokens. A step schedules the running
// requests first (a decode token each, or their next prefill chunk), then
// admits waiting ones in arrival order while fewer than MaxRunning
// (max_num_seqs) run, MaxNumBatchedTokens tokens remain in the step's
// budget and their blocks fit; a running request that needs a block when
// none is free preempts the newest running request, by recompute.
//
// KV cache: NumBlocks physical blocks of BlockSize tokens. A request's
// longest cached prefix of full blocks is reused (at most (tokens-1)/
// BlockSize blocks: the last prompt token is always computed, as in
// vLLM). Blocks no running request references sit in an LRU free queue,
// a finished request's in reverse order so its deepest blocks go first;
// taking a free block that holds an id evicts it (BlockRemoved). A block
// is cached, and its BlockStored published, in the step that computes its
// last token: prompt blocks as their prefill chunks run, blocks of
// generated tokens as decoding fills them (StoreDecodeBlocks, on by
// default, as vLLM does; the last sampled token's KV is never computed,
// so the block it ends is not cached). An id is held by one physical
// block at most, so that a router's view stays exact.
//
// Time: without a Profile, a step takes its new prompt tokens at
// PrefillTokensPerSec plus DecodeTimePerToken when it decodes anything;
// with one (the Dynamo mocker's polynomials, or a measured engine's file:
// --profile) the profile's functions of the step's tokens and KV use.
// Simulated time follows the wall clock across idle periods only: while
// the engine is busy it advances by step durations alone, so reported
// times are the model's, not timer jitter scaled by Speedup. QueueMs runs
// from arrival to the start of the step that first schedules a request,
// PrefillMs from then to the end of the step that produces its first
// token. A client that disconnects aborts its request and frees its
// blocks at once.
//
// # The tokenizer and the "model"
//
// Text is cut into runs of letters or digits and single other characters
// (whitespace only separates); a piece's id is 256 + FNV-1a-64(piece) mod
// (VocabSize - 256). Ids below 256 are special: 1 is BOS (added with
// add_special_tokens), 3-6 the chat template's markers. The chat template
// works on ids, so message text can never forge a marker:
//
//	BOS, then per message <role> content <end of turn>, then <assistant>
//	when add_generation_prompt is true
//
// Generated tokens are words from a fixed list chosen by a hash of the
// prompt: the same prompt always generates the same tokens, as greedy
// decoding does, so repeated requests reuse their generated blocks too.
package kvmock
