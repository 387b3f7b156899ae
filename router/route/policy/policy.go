// Package policy is kvrouter's routing policies by name: kvrouter's own
// (the predicted time to first token of router/route), the peers' (Dynamo's
// cost with its knobs, llm-d's default and precise profiles, SGLang's cache_aware)
// and the blind baselines (round robin, random, least loaded by tokens).
//
// Every policy answers one question over one shared row of inputs per
// candidate worker (Row): the prompt's overlap from the production index
// (KV events), the router's own in-flight load, and the engines' metrics
// as last scraped. A policy reads only what its real counterpart reads;
// one that keeps state of its own (an approximate prefix index, a radix
// tree, a counter) keeps it inside. Each policy is one file that
// registers itself by name (Register), so a new policy is a new file and
// the simulator and the service run every policy by name (New, Names).
package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
)

// ErrUnknownPolicy: New was given a name no policy registered.
var ErrUnknownPolicy = errors.New("unknown routing policy")

// Metrics are one engine's vLLM gauges as a scraper last read them
// (/metrics at a scrape interval, never the live values).
type Metrics struct {
	Waiting int     // vllm:num_requests_waiting
	Running int     // vllm:num_requests_running
	KVUsage float64 // vllm:kv_cache_usage_perc, 0..1
}

// Row is one candidate worker's inputs for one request.
type Row struct {
	Worker core.Worker
	// Overlap: the prompt's leading blocks the worker holds according to
	// its KV events (the production indexer); filled only for policies
	// that say they read it (OverlapReader).
	Overlap uint32
	// Requests: the router's own in-flight requests on the worker (routed,
	// not finished).
	Requests int
	// Tokens: the router's own in-flight tokens on the worker: each
	// in-flight request's prompt plus the tokens it has generated so far.
	Tokens int
	// Metrics: the worker's engine gauges as last scraped.
	Metrics Metrics
}

// Query is the request being routed.
type Query struct {
	RequestID string
	Tokens    []uint32
	// Blocks: the sequence hashes of the prompt's full blocks at the
	// router's block size (router-side approximate indexes key on them).
	Blocks []uint64
}

// Policy chooses a worker: Pick returns the index in rows of the chosen
// one. rows are sorted by worker and not empty; Pick may update the
// policy's own state (an approximate index learns the choice).
type Policy interface {
	Name() string
	Pick(q *Query, rows []Row) (int, error)
}

// OverlapReader is a Policy that reads Row.Overlap (KV events).
type OverlapReader interface {
	ReadsOverlap() bool
}

// Tracker is a Policy that keeps its own load accounting (kvrouter's
// router): the caller reports each routed request's first token and end.
type Tracker interface {
	PrefillDone(requestID string)
	Free(requestID string)
}

// Admitter is a Policy that holds requests at the router while the
// fleet is saturated and routes them later by highest response ratio
// (kvrouter's: router/route/admit). The caller (the simulator, the
// proxy) keeps the queue; the policy says when to hold and each held
// request's service time.
type Admitter interface {
	// HoldTokens: a request is held while every rank has at least this
	// much prefill queued by the router; 0: the policy never holds.
	HoldTokens() uint64
	// SlotBatch: once an engine runs its max_num_seqs requests, the
	// requests routed to it wait at the caller until this many of its
	// slots are free (admit.Slots); 0: they go to the engine at once.
	SlotBatch() int
	// Saturated reports whether a request arriving now would be held.
	Saturated(rows []Row) (bool, error)
	// ServiceS is the request's predicted prefill on an idle rank (its
	// place in the queue).
	ServiceS(q *Query) (float64, error)
}

// Env is what a policy may be built over.
type Env struct {
	// Seed seeds the policy's tie-breaks and draws.
	Seed uint64
	// Indexer: the production index fed by the engines' KV events; its
	// block size is the router's.
	Indexer *indexer.Indexer
	// Model names the index the workers serve.
	Model string
	// EngineBlocks: one engine's GPU KV blocks (llm-d sizes its
	// approximate index by it).
	EngineBlocks int
	// Dynamo: the dynamo policy's knobs (kvrouter always runs the
	// defaults).
	Dynamo route.Params
	// Now is the routers' clock (the simulator's virtual time); nil:
	// time.Now.
	Now func() time.Time
	// NoAdmission: kvrouter routes every request when it arrives and
	// sends it at once, never holding one at the router (Admitter's
	// HoldTokens and SlotBatch are 0).
	NoAdmission bool
	// RequestTTL: how long the production router counts a request never
	// freed; zero: route.DefaultRequestTTL. (A simulator that frees every
	// request sets it beyond its longest queue.)
	RequestTTL time.Duration
}

// Factory builds a policy.
type Factory func(Env) (Policy, error)

var registry = map[string]Factory{}

// Register makes a policy available by name; each policy's file calls it
// from init. Registering a name twice is a programming error.
func Register(name string, f Factory) {
	if _, dup := registry[name]; dup {
		panic("policy: " + name + " registered twice")
	}
	registry[name] = f
}

// tableOrder is the order reports list policies in: kvrouter's, the
// peers', the blind baselines; policies registered later follow by name.
var tableOrder = []string{KVRouter, Dynamo, LLMD, LLMDPrecise, SGLang, RoundRobin, Random, LeastLoaded}

// Names lists the registered policies in report order: kvrouter, the
// peers' (dynamo, llmd, llmd-precise, sglang), the blind baselines, then
// any other by name.
func Names() []string {
	rank := func(n string) int {
		if i := slices.Index(tableOrder, n); i >= 0 {
			return i
		}
		return len(tableOrder)
	}
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

// New builds the policy named name.
func New(name string, env Env) (Policy, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: want one of %v", ErrUnknownPolicy, name, Names())
	}
	p, err := f(env)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	return p, nil
}

// Known reports whether name is a registered policy.
func Known(name string) bool { _, ok := registry[name]; return ok }

// rowOf returns the index of w in rows.
func rowOf(rows []Row, w core.Worker) (int, error) {
	i, ok := slices.BinarySearchFunc(rows, w, func(r Row, w core.Worker) int { return r.Worker.Compare(w) })
	if !ok {
		return 0, fmt.Errorf("%w: worker %d rank %d is not a candidate", route.ErrNoCandidates, w.ID, w.DPRank)
	}
	return i, nil
}
