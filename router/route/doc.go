// Package route chooses a worker rank for a prompt and keeps each rank's
// active load. Two cost models (Params.Cost): CostTTFT, the predicted time
// to first token learned online per rank from the first-token times
// (predict.go, predict_pick.go; the service's default, docs/guides/
// routing.md), and CostDynamo, Dynamo's current cost (reference
// kv-events.md §3; the package's default).
//
// For every healthy rank of the prompt's (model, tenant) Dynamo's cost is
//
//	prefill = max(0, (active prefill tokens + prompt tokens) / block size
//	                 - overlap_score_credit * overlap blocks)
//	cost    = prefill_load_scale * prefill + decode blocks
//
// where overlap blocks come from the indexer (0 for degraded and
// quarantined ranks: they are scored by load only) and decode blocks are
// the distinct blocks of the rank's active requests plus the prompt's
// blocks not among them, as Dynamo's active-sequence tracker counts them
// (blocks are named by their sequence hashes, so a shared prefix counts
// once).
//
// A routed request adds, on its rank, the tokens it must prefill (prompt
// tokens minus the cached overlap, as Dynamo's new_tokens) until
// PrefillDone, and its blocks until Free; a request never freed expires
// after the TTL.
package route
