// Package router is kvrouter: the KV-aware router service built on core.
//
// The data flows through one package a step, each in its own folder:
//
//	ingest/      engines' KV event streams: ZeroMQ SUB (and one bound endpoint), vLLM's and
//	             SGLang's MessagePack wire in every shape, seq tracking, gaps, replay, restarts
//	indexer/     normalized engine events -> core.Index: canonical local hashes from token ids
//	             (core), salt carried down the chain, skipped blocks by reason, one index per
//	             model, worker states (live, degraded, quarantined), stability guardrails,
//	             verification of engines' own block ids (enginehash)
//	route/       choosing a worker: predicted TTFT learned per rank, or Dynamo's cost, temperature,
//	             the active requests and their expiry; route/policy: every policy by name
//	             (kvrouter's, the peers' formulas, the blind baselines) over one row of inputs;
//	             route/admit: holding requests while every engine has a step's prefill queued,
//	             released by highest response ratio (the proxy, the picker, the simulator)
//	serve/       the HTTP API (kvrouter's own, Dynamo's standalone indexer's), metrics,
//	             health, snapshots on a timer, the wiring of every step
//	proxy/       the OpenAI-compatible front door: completions forwarded to the chosen
//	             engine, streams passed through, health checks, the dashboard
//
// Beside the flow:
//
//	enginehash/  engines' own block ids (vLLM sha256 / sha256_cbor / xxhash, SGLang, TensorRT-LLM)
//	verify/      the live engine doctor: one engine's stream, its ids' verdict, the fix
//	snapshot/    the index and each engine's last seq on disk, atomically
//	config/      the YAML config file and its flags
//	zmqcap/      a cap on what a ZeroMQ peer may send, enforced before zmq4 allocates it; engine
//	             connections read through a buffer and, with --ingest-workers, a CPU gate
//	             (internal/cpugate: at most N ingest goroutines at work, so queries keep a P)
//	eventplane/  router replicas sharing one event stream on NATS JetStream
//	engine/      a clock-free model of one vLLM V1 engine: scheduler, KV blocks and prefix
//	             cache, preemption, step times (Dynamo's mocker profile); kvmock and sim run it
//	kvmock/      an engine simulator that behaves toward the router as vLLM does
//	demo/        kvrouter demo: a kvmock fleet, a trace replayed once per policy, the table
//	sim/         kvrouter sim: policies against simulated engines on a virtual clock, through
//	             the production indexer and router; bounds, tables, results.json, plots
//	tests/       end-to-end tests and the router's benchmarks
package router
