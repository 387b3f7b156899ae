// Package core is the kvhash specification in code: the canonical KV-cache
// block hash (spec v1), its sequence-hash chain, the event model, the
// radix-tree index fed by engines' KV events, and the hash-stability
// guardrails.
//
// Every binding (the C ABI, the WASM module, the Go router) calls this
// package; none of them computes a hash itself. The normative description
// of the hash is docs/spec/canonical-hashing.md.
package core
