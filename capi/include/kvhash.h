/*
 * kvhash.h - the C API of kvhash (libkvhash.so).
 *
 * kvhash computes the canonical KV-cache block hashes of LLM serving
 * routers (spec v1: XXH3-64, seed 1337, tokens as little-endian u32) and
 * keeps an index of which inference worker holds which blocks, fed by the
 * engines' KV events. This header is the reference of the C API; the
 * guided tour is docs/api/c.md.
 *
 * Build against it with pkg-config:  cc app.c $(pkg-config --cflags --libs kvhash)
 *
 * CONVENTIONS (they hold for every function below)
 *
 * Status.  Functions returning int32_t return KVHASH_OK (0) or a negative
 *   KVHASH_ERR_* code. On failure, kvhash_last_error() gives a message.
 *   Functions returning a value (kvhash_seed, kvhash_chain_step, ...) cannot
 *   fail except as noted.
 *
 * Inputs.  An input is a pointer plus a length (a count of elements, not
 *   bytes, unless it is a char buffer). A length of 0 is an empty input and
 *   the pointer is not read, so NULL is fine. NULL with a nonzero length is
 *   KVHASH_ERR_INVALID_ARGUMENT, and so is a length no buffer can have
 *   (more than 2^47 bytes). Other lies about lengths cannot be detected:
 *   the library reads exactly `length` elements. Strings are UTF-8 bytes
 *   with an explicit length and need no NUL terminator. The library reads
 *   inputs only during the call and keeps nothing.
 *
 * Outputs.  Results go to caller-provided buffers: `out` with room for
 *   `out_cap` elements, and `*out_len` receives the number written. If the
 *   result does not fit, nothing is written to `out`, the call returns
 *   KVHASH_ERR_BUFFER_TOO_SMALL and `*out_len` receives the number needed:
 *   call again with a buffer at least that large (passing out = NULL,
 *   out_cap = 0 is the way to ask for the size). On any other error
 *   `*out_len` is set to 0. `out_len` (and every other out pointer) must not
 *   be NULL: that is KVHASH_ERR_INVALID_ARGUMENT. Input and output buffers
 *   must not overlap.
 *
 * Handles.  An index is named by a uint64_t handle from kvhash_index_new,
 *   never 0 and never reused. After kvhash_index_free, and for any value
 *   that was never returned, functions return KVHASH_ERR_UNKNOWN_HANDLE.
 *
 * Threads.  Every function is safe to call from any thread at any time,
 *   also on the same index handle (the index serialises its updates). The
 *   last error is kept per thread.
 *
 * Failures never crash the process: an internal bug (a Go panic) is caught
 *   and returned as KVHASH_ERR_INTERNAL with a message.
 */
#ifndef KVHASH_H
#define KVHASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ------------------------------------------------------ */

/* Success. */
#define KVHASH_OK 0
/* Bad input: NULL pointer with a nonzero length, NULL out pointer, block
 * size 0 or negative, more multimodal entries than blocks, an unknown
 * mode, an impossible length. */
#define KVHASH_ERR_INVALID_ARGUMENT (-1)
/* The output buffer is too small; *out_len holds the size needed. */
#define KVHASH_ERR_BUFFER_TOO_SMALL (-2)
/* The index handle is unknown or freed. */
#define KVHASH_ERR_UNKNOWN_HANDLE (-3)
/* The event JSON is malformed (bad syntax, a missing or mistyped field, an
 * unknown event kind). */
#define KVHASH_ERR_DECODE (-4)
/* The index rejected the event, fully or partly: a hash-stability
 * violation that is an error in the current mode (see kvhash_index_new). */
#define KVHASH_ERR_REJECTED (-5)
/* An internal error (a bug in kvhash, caught); the message says more. */
#define KVHASH_ERR_INTERNAL (-6)
/* WASM module only: a pointer/length outside every live allocation. The C
 * library never returns it. */
#define KVHASH_ERR_OUT_OF_BOUNDS (-7)
/* WASM module only: the request would take the module's heap past its
 * memory budget (5/8 of its memory limit: 4 GiB, or the host's
 * KVHASH_WASM_MEMORY_LIMIT). Nothing changed and the instance stays
 * usable: free indexes or buffers and retry. Hashing is never refused.
 * The C library never returns it. */
#define KVHASH_ERR_NO_MEMORY (-8)

/* ---- Index modes (kvhash_index_new, kvhash_index_set_mode) ------------- */

/* Enforce if the environment variable KVHASH_ENFORCE_ENGINE_HASH_STABILITY
 * or DYN_KV_ENFORCE_ENGINE_HASH_STABILITY is "1" or "true", else warn. */
#define KVHASH_MODE_FROM_ENVIRONMENT 0
/* Stability violations are counted (see kvhash_index_stats_json) and the
 * event is applied as far as it can be. KVHASH_ERR_REJECTED is returned
 * only when part of the event could not be applied: a stored event whose
 * parent the worker does not hold (the whole store is dropped), a store
 * with a block equal to its parent hash (dropped), a removal of a block
 * the worker does not hold (that hash is skipped, the rest applied). A
 * hash mismatch (known content under another engine hash), a duplicate
 * store or a reused engine hash (name_reused: applied as Dynamo applies
 * it) is only counted. */
#define KVHASH_MODE_WARN 1
/* Every stability violation, the counted-only kinds included, returns
 * KVHASH_ERR_REJECTED and marks the worker rank unstable (see the stats)
 * until it is cleared or removed. */
#define KVHASH_MODE_ENFORCE 2

/* ---- Versions and errors ----------------------------------------------- */

/* The library version, e.g. "0.1.0". A static NUL-terminated string: never
 * free it. */
const char *kvhash_version(void);

/* The hashing spec version the library implements, "v1". Static; never
 * free it. */
const char *kvhash_spec_version(void);

/* Copies the message of the last failed call made on this thread into
 * buf (at most cap - 1 bytes plus a NUL; a cut copy ends on a UTF-8
 * character boundary) and returns the message's full length in bytes,
 * NUL not counted. With cap == 0 (buf may be NULL) nothing is copied: use
 * it to size the buffer. Successful calls do not clear the message; before
 * any failure it is empty (returns 0). Messages are at most 4095 bytes. */
size_t kvhash_last_error(char *buf, size_t cap);

/* ---- Hashing ------------------------------------------------------------ */

/* The seed of the local block hashes for a LoRA adapter name and a cache
 * namespace (cache_salt): 1337, plus XXH3-64(lora, seed 0) if lora is not
 * empty, plus XXH3-64(ns, seed 1) if ns is not empty, wrapping mod 2^64.
 * An empty string (length 0) means absent. On invalid input (NULL with a
 * nonzero length) returns 0 and sets the last error. */
uint64_t kvhash_seed(const char *lora, size_t lora_len, const char *ns, size_t ns_len);

/* XXH3-64 with seed 1337 of n bytes of data, the primitive every hash of
 * the spec is built on. It exists so that an integration can check its
 * build against the raw-bytes vectors (XXH3-64("test data", 1337) =
 * 13226331709069118873); block hashes need no call to it.
 * Errors: INVALID_ARGUMENT (data NULL with n > 0, out_hash NULL). */
int32_t kvhash_raw_hash(const uint8_t *data, size_t n, uint64_t *out_hash);

/* One step of the sequence-hash chain: XXH3-64 with seed 1337 of the 16
 * bytes LE64(parent_sequence_hash) || LE64(local_hash). Cannot fail. */
uint64_t kvhash_chain_step(uint64_t parent_sequence_hash, uint64_t local_hash);

/* How many local hashes n_tokens tokens give: n_tokens / block_size, or
 * with eagle != 0, (n_tokens - 1) / block_size (0 for no tokens). A
 * trailing partial block is not counted. Writes the count to *out_count.
 * Errors: block_size <= 0, out_count NULL (INVALID_ARGUMENT). */
int32_t kvhash_block_count(size_t n_tokens, int64_t block_size, int32_t eagle,
                           size_t *out_count);

/* The local (position-independent) hash of every full block of tokens,
 * written to out[0 .. *out_len).
 *
 *   tokens, n_tokens     the prompt's token ids
 *   block_size           tokens per block, > 0
 *   lora, lora_len       LoRA adapter name (UTF-8), length 0 = none
 *   ns, ns_len           cache namespace (UTF-8), length 0 = none
 *   eagle                nonzero: EAGLE windows of block_size + 1 tokens,
 *                        stride block_size
 *   mm_counts, mm_blocks mm_counts[i] = number of multimodal object hashes
 *                        of block i (0 = none), for the first mm_blocks
 *                        blocks; mm_blocks must not exceed the block count
 *                        (mm_blocks = 0: no multimodal data)
 *   mm_hashes            the blocks' multimodal hashes concatenated, in any
 *                        order within a block; sum(mm_counts) values. The
 *                        library cannot see this array's length and reads
 *                        sum(mm_counts) values: a count that no block can
 *                        have (above both the block's token count and
 *                        65536) is INVALID_ARGUMENT, and nothing is read
 *   out, out_cap         output buffer and its capacity in hashes
 *   out_len              receives the number of hashes (or, with
 *                        KVHASH_ERR_BUFFER_TOO_SMALL, the number needed)
 *
 * The count is kvhash_block_count(n_tokens, block_size, eagle). Without
 * multimodal data the call does not allocate.
 * Errors: INVALID_ARGUMENT (block_size <= 0, mm_blocks > block count,
 * an impossible mm_counts entry, NULL with a length), BUFFER_TOO_SMALL. */
int32_t kvhash_block_hashes(const uint32_t *tokens, size_t n_tokens, int64_t block_size,
                            const char *lora, size_t lora_len, const char *ns, size_t ns_len,
                            int32_t eagle,
                            const uint64_t *mm_hashes, const uint32_t *mm_counts, size_t mm_blocks,
                            uint64_t *out, size_t out_cap, size_t *out_len);

/* kvhash_block_hashes and kvhash_sequence_hashes in one call: the local
 * hash of every full block to out_local[0 .. *out_len) and their sequence
 * hashes to out_sequence[0 .. *out_len). It computes both in one pass,
 * which is faster than the two calls (the chain's steps, each waiting for
 * the one before, overlap with hashing the next block), and in a WASM host
 * it is one boundary crossing instead of two.
 *
 *   tokens ... mm_blocks  as kvhash_block_hashes
 *   out_local            receives the local hashes
 *   out_sequence         receives the sequence hashes: out_sequence[0] =
 *                        out_local[0], out_sequence[i] =
 *                        kvhash_chain_step(out_sequence[i-1], out_local[i])
 *   out_cap              the capacity of each of the two buffers, in hashes
 *   out_len              receives the number of blocks (or, with
 *                        KVHASH_ERR_BUFFER_TOO_SMALL, the number needed;
 *                        then neither buffer is written)
 *
 * The two output buffers must not overlap each other. Without multimodal
 * data the call does not allocate.
 * Errors: as kvhash_block_hashes (INVALID_ARGUMENT also when out_local or
 * out_sequence is NULL with out_cap > 0), BUFFER_TOO_SMALL. */
int32_t kvhash_block_and_sequence_hashes(const uint32_t *tokens, size_t n_tokens, int64_t block_size,
                                         const char *lora, size_t lora_len, const char *ns, size_t ns_len,
                                         int32_t eagle,
                                         const uint64_t *mm_hashes, const uint32_t *mm_counts,
                                         size_t mm_blocks,
                                         uint64_t *out_local, uint64_t *out_sequence, size_t out_cap,
                                         size_t *out_len);

/* The sequence hashes of n local hashes: out[0] = block_hashes[0], out[i] =
 * kvhash_chain_step(out[i-1], block_hashes[i]). Writes n values.
 * Errors: INVALID_ARGUMENT, BUFFER_TOO_SMALL (out_cap < n). */
int32_t kvhash_sequence_hashes(const uint64_t *block_hashes, size_t n,
                               uint64_t *out, size_t out_cap, size_t *out_len);

/* ---- The index ---------------------------------------------------------- */

/* Creates an empty index with a KVHASH_MODE_* mode and writes its handle to
 * *out_handle. Free it with kvhash_index_free.
 * Errors: INVALID_ARGUMENT (unknown mode, out_handle NULL). */
int32_t kvhash_index_new(int32_t mode, uint64_t *out_handle);

/* Frees an index. Using the handle afterwards (including a second free)
 * is KVHASH_ERR_UNKNOWN_HANDLE. Calls already running on the index on
 * other threads finish normally. */
int32_t kvhash_index_free(uint64_t h);

/* Changes the mode (KVHASH_MODE_*) of an index for the following events.
 * KVHASH_MODE_FROM_ENVIRONMENT reads the environment again. */
int32_t kvhash_index_set_mode(uint64_t h, int32_t mode);

/* Applies one KV event of a worker, as the engine publishes it: Dynamo's
 * KvCacheEvent JSON, len bytes, e.g.
 *   {"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":
 *     [{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}
 * "data" is {"stored":{...}}, {"removed":{"block_hashes":[...]}} or
 * "cleared"; "dp_rank" defaults to 0; hashes are exact u64 JSON integers;
 * unknown fields are skipped. The worker is (worker_id, dp_rank).
 * Errors: DECODE (malformed JSON, a missing or mistyped field, an unknown
 * kind: the index is not touched), REJECTED (see KVHASH_MODE_WARN and
 * KVHASH_MODE_ENFORCE; the parts of the event that could be applied were). */
int32_t kvhash_index_apply_json(uint64_t h, uint64_t worker_id, const char *json, size_t len);

/* Applies one router event: Dynamo's RouterEvent JSON,
 *   {"worker_id":7,"storage_tier":"device","event":{...KvCacheEvent...}}
 * the form kvhash_index_dump_jsonl writes. storage_tier is optional
 * ("device", "host_pinned", "disk" or "external"; every tier is indexed
 * alike). Errors as kvhash_index_apply_json; an unknown tier is DECODE. */
int32_t kvhash_index_apply_router_event_json(uint64_t h, const char *json, size_t len);

/* Applies a "stored" event without JSON: worker (worker_id, dp_rank) stored
 * n_blocks blocks, each named by the engine's block_hashes[i] and holding
 * content with canonical local hash tokens_hashes[i], as a chain below the
 * block the engine calls parent_hash (has_parent != 0) or at the root
 * (has_parent == 0). Blocks carry no multimodal data here; use the JSON
 * form for that.
 * Errors: INVALID_ARGUMENT, REJECTED (enforce mode). */
int32_t kvhash_index_apply_stored(uint64_t h, uint64_t worker_id, uint32_t dp_rank,
                                  uint64_t event_id, int32_t has_parent, uint64_t parent_hash,
                                  const uint64_t *block_hashes, const uint64_t *tokens_hashes,
                                  size_t n_blocks);

/* Applies a "removed" event without JSON: the worker evicted the n blocks
 * it named block_hashes[i] (engine hashes). A block no worker holds any
 * more leaves the index; removal does not cascade to descendants.
 * Errors: INVALID_ARGUMENT, REJECTED (a block the worker does not hold, in
 * every mode: it is skipped and the others removed). */
int32_t kvhash_index_apply_removed(uint64_t h, uint64_t worker_id, uint32_t dp_rank,
                                   uint64_t event_id, const uint64_t *block_hashes, size_t n);

/* Drops every block of one rank of a worker (a "cleared" event). The rank
 * stays known (kvhash_index_workers) and is no longer unstable. */
int32_t kvhash_index_clear_worker(uint64_t h, uint64_t worker_id, uint32_t dp_rank);

/* Drops every block of every rank of a worker; its ranks stay known. */
int32_t kvhash_index_clear_all_blocks(uint64_t h, uint64_t worker_id);

/* Removes every rank of a worker from the index, with its blocks and its
 * per-worker statistics. */
int32_t kvhash_index_remove_worker(uint64_t h, uint64_t worker_id);

/* Scores the workers against a prompt given as its n canonical local block
 * hashes (kvhash_block_hashes): for every (worker, rank) holding at least
 * the first block, one entry i with worker_ids[i], dp_ranks[i], scores[i]
 * (how many leading blocks of the prompt it holds in a row) and
 * tree_sizes[i] (how many blocks it holds in all), sorted by (worker_id,
 * dp_rank). The four arrays each have room for cap entries; *out_len
 * receives the number of entries. With early_exit != 0 the last worker
 * left is still counted along the prompt, but the walk stops at a block
 * with several children, as Dynamo 1.6.1's does (docs/index.md).
 * Errors: INVALID_ARGUMENT, BUFFER_TOO_SMALL. */
int32_t kvhash_index_find_matches(uint64_t h, const uint64_t *local_hashes, size_t n,
                                  int32_t early_exit,
                                  uint64_t *worker_ids, uint32_t *dp_ranks, uint32_t *scores,
                                  uint64_t *tree_sizes, size_t cap, size_t *out_len);

/* The whole index as router events, one JSON object per line, each line
 * ending in '\n' (JSON Lines), written to buf (cap bytes; *out_len receives
 * the byte count). No NUL is written. Replaying the lines with
 * kvhash_index_apply_router_event_json into an empty index rebuilds it.
 * Errors: BUFFER_TOO_SMALL. */
int32_t kvhash_index_dump_jsonl(uint64_t h, char *buf, size_t cap, size_t *out_len);

/* The index's statistics as one JSON object: mode, node count, per worker
 * rank its block count, stability flag and violation counts, and the
 * violation totals. Written to buf (cap bytes, no NUL); *out_len receives
 * the byte count. Errors: BUFFER_TOO_SMALL. */
int32_t kvhash_index_stats_json(uint64_t h, char *buf, size_t cap, size_t *out_len);

/* The (worker_id, dp_rank) pairs the index knows, sorted, into two arrays
 * of cap entries; *out_len receives the count. Errors: BUFFER_TOO_SMALL. */
int32_t kvhash_index_workers(uint64_t h, uint64_t *worker_ids, uint32_t *dp_ranks,
                             size_t cap, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* KVHASH_H */
