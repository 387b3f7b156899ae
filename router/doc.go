// Package router is kvrouter: the KV-aware router service built on core.
//
// The data flows through one package a step, each in its own folder:
//
//	ingest/      engines' KV event streams: ZeroMQ SUB (and one bound endpoint), vLLM's and
//	             SGLang's MessagePack wire in every shape, seq tracking, gaps, replay, restarts
//	indexer/     normalized engine events -> core.Index: canonical local hashes from token ids
//	             (core), salt carried down the chain, skipped blocks by reason, one index per
//	             model, worker states (live, degraded, quarantined), stability guardrails
//	route/       choosing a worker: Dynamo's cost over overlap and active load, temperature,
//	             the active requests and their expiry
//	serve/       the HTTP API (kvrouter's own, Dynamo's standalone indexer's), metrics,
//	             health, the proxy to engines, the dashboard
//	snapshot/    the index and each engine's last seq on disk, atomically
//	config/      the YAML config file and its flags
//
// Beside the flow:
//
//	enginehash/  engines' own block ids (vLLM sha256 / sha256_cbor, SGLang, TensorRT-LLM)
//	kvmock/      an engine simulator that behaves toward the router as vLLM does
//	eventplane/  router replicas sharing one event stream on NATS JetStream
package router
