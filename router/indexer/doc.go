// Package indexer is kvrouter's view of the fleet: which workers exist,
// which KV blocks each (worker, dp rank) holds, and whether its blocks can
// be trusted.
//
// It implements ingest.Handler: each engine BlockStored event is turned
// into canonical local hashes with core (token ids at the router's block
// size, the LoRA name and the cache salt as core.Options) and applied to
// one core.Index per (model, tenant), so a second model's prompts never
// match the first's blocks. Blocks it cannot hash faithfully are not
// indexed but counted per worker rank by reason (SkipReason) and warned
// about once per worker and reason.
//
// # Rank states
//
// Every (worker, dp rank) is in one of three states (State):
//
//   - live: its blocks are exact; it is scored by overlap and load.
//   - degraded: events were lost for good (ingest's StreamGapLost), or
//     the router joined the stream mid-way (the rank's first batch has a
//     seq above 0 and no snapshot said where it stood). Its blocks were
//     cleared (or never known) and it is scored by load only. It becomes live
//     again at the first of: the engine clears its cache or restarts
//     (AllBlocksCleared, StreamRestarted: the index is exact again), or
//     a batch handled once Options.DegradedSettle has passed since the gap,
//     with at least one store applied since the gap. Until then the index
//     holds only blocks stored after the gap: a subset of the engine's
//     cache, never a block it no longer has.
//   - quarantined (enforce mode only): its engine hashes proved unstable
//     (core returned an enforced StabilityError while the rank was live).
//     Its blocks were cleared, a replay was requested (Options.Replay), and
//     it is scored by load only. Its events keep being applied; it becomes
//     live again once Options.QuarantineSettle has passed with at least
//     one store applied and no violation since it was quarantined or
//     since the last violation (each violation restarts the clock).
//
// Each transition is logged once, at warn level, with the fix.
//
// # Engine-hash verification
//
// Independently of its state, each rank has a verdict on its engine's block
// ids (Verdict, EngineHashInfo; verify.go): the id of a block stored at the
// root of the engine's tree depends only on the engine's scheme, its seed
// and the block's content, so the indexer recomputes it (router/enginehash)
// under the worker's engine_hash (WorkerSpec.EngineHash: auto, off, SCHEME
// or SCHEME:SEED). pending: no root store yet; verified (scheme, seed);
// unverifiable (why); unstable: a conclusive root store matched nothing,
// which is what a random root per process gives. The first
// Options.VerifyFirst root stores are checked (again after each engine
// restart), then one in Options.VerifyEvery; unverified ranks check every
// one. Unstable is logged once with the fix and, in enforce mode,
// quarantines the rank until a root store verifies again. Workers of one
// index verified under different candidates are reported once
// (HashAgreements, EngineHashInfo.Disagrees).
//
// # Bounds
//
// What publishers can make the router keep is bounded (caps.go): an
// event names one of its worker's ranks (0..dp_size-1; an engine stream
// may add dp_size more, for engines that number their ranks fleet-wide),
// a rank holds at most Options.MaxRankBlocks blocks (stores beyond are
// refused whole, SkipRankFull), and a worker's model, tenant and topic
// are bounded labels (CheckLabel). Refused events are counted by kind
// (Refused) and logged at most every ten seconds per kind.
//
// # Salt
//
// The cache salt (SGLang's cache_salt key, or vLLM's salt: the string in
// the first block's extra keys that is not the LoRA name) is the
// namespace of core's seed. vLLM sends it with a request's first block
// only, so the indexer remembers each salted block's salt by (worker rank,
// engine hash) and gives it to blocks stored under that parent; entries
// go when the block is removed or the rank cleared.
package indexer
