// Package sim measures routing quality on a virtual clock: it replays a
// Mooncake-format trace against a fleet of simulated vLLM V1 engines
// (router/engine) under each routing policy (router/route/policy), at
// each offered load, and reports latency, prefix hits, load spread and
// goodput beside two bounds (one infinite cache, one pooled LRU cache
// with the whole fleet's capacity).
//
// The clock is a discrete-event loop over arrivals, engine step ends and
// metric scrapes: no wall clock, no sockets, so the same seed gives the
// same numbers and a trace of an hour replays in seconds. The policies
// under test are the production code: each engine's KV events go, at
// the end of the step that caused them, into the production indexer
// (router/indexer, as batches of BlockStored and BlockRemoved with the
// blocks' token ids, exactly what the ZeroMQ subscriber hands it); the
// kvrouter and dynamo policies are router/route's Router, whose load
// accounting follows each request from routed to prefill done (its first
// token) to freed (its end), as the service's does. Policies that read
// engines' gauges see them as a scraper does: a snapshot of every
// engine's Stats taken every ScrapeInterval of virtual time.
//
// Each trace hash id (512 tokens) expands to a deterministic run of token
// ids (a function of the id alone), so prompts sharing k ids share their
// first 512k tokens and nothing else; engine blocks are smaller (64 or 16
// tokens), so a trace block is several engine blocks, all distinct.
// Nothing treats a request's first hash id as its conversation.
package sim
