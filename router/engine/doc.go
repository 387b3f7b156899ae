// Package engine is a clock-free model of one vLLM V1 engine: its
// scheduler, its KV block pool with the prefix cache, and how long each
// scheduler step takes. It owns no clock: Step says how long the step it
// just ran takes, and the caller advances its own clock by that much
// (kvmock sleeps it, scaled; the simulator adds it to virtual time) and
// then delivers the step's events. The same inputs always give the same
// steps, durations and events.
//
// # The API
//
//	p := engine.DefaultProfile()            // or engine.LoadProfile("my-gpu.json")
//	cfg := engine.DefaultConfig()           // Dynamo mocker's defaults, cfg.Profile = p
//	e, err := engine.New(cfg)
//	err = e.Add(engine.Request{ID: "r1", BlockHashes: hs, PromptTokens: 700, OutputTokens: 20})
//	for !e.Idle() {
//	        res := e.Step()                  // res.Duration: advance the clock by it
//	        ... res.FirstTokens, res.Generated, res.Finished, res.Stored, res.Removed, res.Preempted
//	}
//	st := e.Stats()                         // Running, Waiting, KVUsage, ... as vLLM's /metrics
//
// The slices of a StepResult are reused by the next Step: copy what must
// outlive it. BlockStored.Hashes aliases the request's BlockHashes.
//
// # The scheduler (vLLM V1's, vllm/v1/core/sched/scheduler.py)
//
// One step schedules, within a budget of MaxNumBatchedTokens tokens:
//
//  1. the running requests in admission order: a decode needs one token,
//     a request still in prefill its next chunk (as much of its remaining
//     prompt as the budget has left). A request that needs a new KV block
//     when none is free preempts the most recently admitted running
//     request (LIFO, vLLM's default and the mocker's), by recompute: its
//     blocks are freed (their cached blocks stay reusable until evicted)
//     and it goes back to the front of the waiting queue, its progress
//     lost; if it is itself the newest, it preempts itself and waits.
//  2. then, if nothing was preempted this step, waiting requests in FCFS
//     order while fewer than MaxNumSeqs run, budget remains and their
//     blocks fit; the first that does not fit stops admission (no
//     overtaking). Without chunked prefill a prompt must fit in the
//     remaining budget whole.
//
// A request's prefix hit is the longest run of its leading BlockHashes
// that the cache holds (blocks in use or free), at most (tokens-1)/
// BlockSize blocks: the last token is always computed, as in vLLM.
//
// Tokens: a request has computed the KV of some of its tokens; when the
// computed count reaches its length (prompt + generated so far), the step
// samples its next token. So the step that finishes a prefill emits the
// first token (FirstTokens), each later step one more (Generated), and
// the request finishes when it has OutputTokens tokens: 1 prefill and
// OutputTokens-1 decode steps when nothing interferes. A request
// preempted after generating g tokens recomputes prompt + g tokens.
//
// # The KV cache (vLLM V1's block pool, vllm/v1/core/block_pool.py)
//
// NumBlocks blocks of BlockSize tokens. Blocks no running request
// references wait in one free queue; allocation takes from its head;
// a finished or preempted request's blocks join the tail in reverse
// order, so its deepest blocks are evicted first and the shared prefix
// last. A free block keeps its hash (stays a prefix hit) until an
// allocation takes it: that is an eviction, reported in Removed. A block
// is cached, and reported in Stored, in the step that computes its last
// token, if the request gave a hash for it: block k is identified by
// BlockHashes[k] (the caller's chained hash; the engine never hashes).
// Callers that know the generated tokens (kvmock: its "model" is
// deterministic) may give hashes past the prompt, so that decode blocks
// are cached and published as vLLM does; callers that do not (the
// simulator) give the prompt's full blocks only, and decode blocks then
// take KV but are never cached or published — a router only matches
// prompt blocks. A hash is held by one block at most: a block whose hash
// another block already holds is left uncached and unpublished, so that
// every Stored hash has exactly one later Removed (or a reset) and a
// router's index stays exact (vLLM may hold duplicates).
//
// # Time (Dynamo's mocker, ai-dynamo/dynamo lib/mocker)
//
// The default profile is the mocker's polynomial timing
// (docs/mocker/mocker.md; coefficients from lib/mocker/src/protocols.rs,
// PrefillCost::predict_prefill_compute):
//
//	prefill ms = 4.209989e-7*T^2 + 1.518344e-2*T + 16.50142   T new prompt tokens
//	decode  ms = max(1, -25.74*p^2 + 54.01*p + 5.74)          p = KV blocks in use / NumBlocks
//
// A step's duration is its prefill time plus its decode time: the mocker
// runs a forward pass as a prefill phase followed by a decode phase and
// waits out both (lib/mocker/src/scheduler.rs, simulate_prefill then
// simulate_decode). Prefill time is zero without prefill tokens and decode
// time zero without decoding requests; p is measured after the step's
// allocations. T is the step's total new prefill tokens by default
// (vLLM runs every chunk in one forward pass); a profile with
// prefill_per_sequence evaluates the polynomial per request chunk and
// sums, as the older mocker did. An optional term prices attention over
// already computed context: prefill_context_ms times the sum over chunks
// of new tokens x tokens before the chunk (0 in the default profile, so
// the mocker's numbers stand). Profiles are small JSON files
// (profiles/*.json; LoadProfile), so a profile measured on a real vLLM
// can replace the default.
//
// Checked against Dynamo's own simulator (DynoSim, the mocker engine): on
// the Mooncake synthetic trace, 8 engines, round robin at 1x arrivals,
// this model gives DynoSim's prefix reuse (0.112) and TTFT mean and p90
// (302 ms, 791 ms); router/sim's dynosim test and
// docs/guides/routing-benchmark.md keep the comparison.
package engine
