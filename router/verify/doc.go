// Package verify is the live engine doctor: it subscribes to one engine's
// KV event stream for a few seconds (router/ingest), feeds it to an
// indexer that verifies the engine's root stores (router/indexer's
// engine-hash verification, router/enginehash's schemes), and reports each
// rank's verdict with the engine flags that fix it. `kvrouter doctor
// --events` and `python -m kvhash doctor --events` run it.
package verify
