package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Engine is one simulated vLLM V1 engine. It is not safe for concurrent
// use: callers serialise Add, Abort, Step and the rest.
type Engine struct {
	cfg     Config
	pool    *pool
	byID    map[string]*seq
	running []*seq // admission order: the last is preempted first
	waiting deque
	stats   Stats
	res     StepResult // reused by every Step
}

// StepResult is what one scheduler step did. Its slices are reused by the
// next Step: copy what must outlive it.
type StepResult struct {
	// Duration is how long the step takes: the caller's clock advances by
	// it, and the step's events happen at its end.
	Duration time.Duration
	// PrefillTokens and DecodeSeqs are what the step computed; KVUsage the
	// fraction of blocks in use that its decode time was priced at.
	PrefillTokens int
	DecodeSeqs    int
	KVUsage       float64

	Admitted    []Admission // requests scheduled for the first time
	FirstTokens []string    // requests whose first token this step produced
	Generated   []string    // requests that produced a token (first tokens included)
	Finished    []Finished  // requests that produced their last token (freed)
	Preempted   []string    // requests sent back to waiting, their progress lost
	// KV events. Evictions happen while the step allocates, stores after
	// it computes: deliver (and replay) Removed before Stored.
	Stored  []BlockStored
	Removed []uint64 // hashes evicted from the prefix cache, in order
}

// Admission is a request's first scheduling.
type Admission struct {
	ID           string
	CachedTokens int // prompt tokens reused from the prefix cache
}

// Finished is a request that produced its last token.
type Finished struct {
	ID           string
	PromptTokens int
	CachedTokens int // prefix hit at its first admission
	OutputTokens int
	Preemptions  int
}

// BlockStored is a run of one request's blocks newly cached this step
// (vLLM's BlockStored event): blocks FirstBlock.. of RequestID, whose
// hashes are Hashes (aliasing the request's BlockHashes), after Parent
// (the hash of block FirstBlock-1; HasParent false at the sequence's
// start).
type BlockStored struct {
	RequestID  string
	FirstBlock int
	Parent     uint64
	HasParent  bool
	Hashes     []uint64
}

// Stats is the engine's state as a vLLM engine's /metrics shows it.
type Stats struct {
	Running int // vllm:num_requests_running
	Waiting int // vllm:num_requests_waiting
	// KVUsage is blocks in use by requests / all blocks
	// (vllm:kv_cache_usage_perc, 1 = full).
	KVUsage      float64
	NumBlocks    int
	UsedBlocks   int // referenced by a request
	CachedBlocks int // holding a hash (in use or free)
	FreeBlocks   int

	// Counters since New. Prefix queries and hits are in tokens, counted
	// at every admission (vllm:prefix_cache_queries / _hits).
	PrefixQueries    uint64
	PrefixHits       uint64
	PromptTokens     uint64 // prompt tokens of admitted requests (first admission)
	GenerationTokens uint64
	Finished         uint64
	Aborted          uint64
	Preemptions      uint64
	Steps            uint64
}

// New returns an idle engine with an empty cache.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	return &Engine{
		cfg:  cfg,
		pool: newPool(cfg.NumBlocks),
		byID: make(map[string]*seq),
	}, nil
}

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Check reports the error Add would return for r now, adding nothing
// (a caller that queues r before adding it refuses it when it arrives).
func (e *Engine) Check(r Request) error { return e.checkRequest(r) }

// Add queues r at the back of the waiting queue.
func (e *Engine) Add(r Request) error {
	if err := e.checkRequest(r); err != nil {
		return err
	}
	s := &seq{id: r.ID, hashes: r.BlockHashes, prompt: r.PromptTokens, output: r.OutputTokens}
	e.byID[r.ID] = s
	e.waiting.pushBack(s)
	return nil
}

// Abort removes a request wherever it is, freeing its blocks (their
// cached hashes stay reusable). It reports whether the request was there.
func (e *Engine) Abort(id string) bool {
	s, ok := e.byID[id]
	if !ok {
		return false
	}
	delete(e.byID, id)
	if s.running {
		i := slices.Index(e.running, s)
		e.running = slices.Delete(e.running, i, i+1)
		e.pool.release(s.blocks)
		s.blocks = s.blocks[:0]
		s.running = false
	} else {
		e.waiting.remove(s) // its blocks are only a prefix hit's: no references held
	}
	e.stats.Aborted++
	return true
}

// Idle reports whether nothing is waiting or running.
func (e *Engine) Idle() bool { return len(e.running) == 0 && e.waiting.len() == 0 }

// Has reports whether the request is waiting or running.
func (e *Engine) Has(id string) bool { _, ok := e.byID[id]; return ok }

// ErrBlocksInUse: the prefix cache cannot be reset while requests hold
// blocks (vLLM refuses too).
var ErrBlocksInUse = errors.New("KV blocks are in use by running requests")

// ResetPrefixCache forgets every cached block (vLLM's reset_prefix_cache;
// the caller publishes AllBlocksCleared). No Removed is reported.
func (e *Engine) ResetPrefixCache() error {
	if e.pool.used() > 0 {
		return ErrBlocksInUse
	}
	e.pool.reset()
	return nil
}

// Stats is a snapshot of the engine's state and counters.
func (e *Engine) Stats() Stats {
	st := e.stats
	st.Running = len(e.running)
	st.Waiting = e.waiting.len()
	st.NumBlocks = len(e.pool.blocks)
	st.UsedBlocks = e.pool.used()
	st.FreeBlocks = e.pool.nFree
	st.CachedBlocks = len(e.pool.byHash)
	st.KVUsage = float64(st.UsedBlocks) / float64(st.NumBlocks)
	return st
}

// CachedHashes appends every hash the prefix cache holds to dst, in no
// particular order (for tests and checks: O(cached blocks)).
func (e *Engine) CachedHashes(dst []uint64) []uint64 {
	for h := range e.pool.byHash {
		dst = append(dst, h)
	}
	return dst
}
