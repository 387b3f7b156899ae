// Package proxy makes kvrouter an OpenAI-compatible front door: POST
// /v1/completions and /v1/chat/completions are routed to one engine and
// forwarded to its base URL, streams passed through chunk by chunk.
//
// # Routing a request
//
// A prompt given as token ids is routed as is. A text prompt or chat
// messages are first tokenized by one healthy engine's POST /tokenize
// (vLLM's API; for messages the engine applies its own chat template), so
// kvrouter needs no tokenizer and routes on exactly the ids the engine will
// hash. The cost is one extra round trip to an engine before routing (the
// X-Kvrouter-Tokenize-Us response header measures it); clients that send
// token ids skip it.
//
// The policy is kvrouter's cost (router/route: overlap and active load)
// unless the X-Kvrouter-Policy request header names a baseline:
// round_robin, random or least_loaded (fewest requests in flight through
// this proxy). The baselines exist to measure what KV-aware routing buys
// (kvrouter demo); they see the same candidates (healthy workers with a
// base URL).
//
// # Load
//
// kvrouter's policy records the request's load at route time (route.Route),
// marks its prefill done at the first byte of the engine's answer (the
// first streamed token; the whole answer for a non-streaming request), and
// frees it when the answer ends or the client goes away (the request's
// context is cancelled, which cancels the upstream request too).
//
// # Failures
//
// An engine that cannot be reached answers 502, one that times out 504,
// both as OpenAI's error object. An engine's own error answer (4xx, 5xx
// with a body) is passed through unchanged. A GET /health poller takes an
// engine that fails its checks out of rotation (indexer.SetHealthy: route
// excludes it, GET /v1/workers shows "healthy": false) and puts it back
// when it answers again; a connection failure while proxying takes it out
// at once, without waiting for the next poll.
package proxy
