package engine

import (
	"errors"
	"fmt"
)

// Request is one generation request as the engine sees it.
type Request struct {
	ID string
	// BlockHashes identify the sequence's full blocks, block k holding
	// tokens [k*BlockSize, (k+1)*BlockSize): chained hashes, so that a
	// hash names a block together with its whole prefix. The caller
	// computes them (with core, or its engine's own ids); the engine never
	// hashes. The prompt's full blocks at least, for prefix caching; more
	// (blocks of generated tokens) when the caller knows them.
	BlockHashes  []uint64
	PromptTokens int // may end in a partial block
	OutputTokens int // tokens to generate, >= 1
}

// Errors of Add.
var (
	ErrDuplicateID = errors.New("a request with this id is already in the engine")
	ErrBadRequest  = errors.New("invalid request")
	ErrTooLarge    = errors.New("request can never fit this engine")
)

// seq is a request inside the engine.
type seq struct {
	id      string
	hashes  []uint64
	prompt  int
	output  int
	running bool

	generated   int     // tokens sampled so far
	computed    int     // tokens whose KV is computed (since the last admission)
	prefillDone bool    // computed has reached the sequence's length since admission
	blocks      []int32 // block table: blocks[k] holds tokens of block k; while waiting, the prefix hit's blocks
	hitGen      uint64  // the pool generation blocks was computed at while waiting (0: none)
	hitLimit    int
	stored      int // blocks [0, stored) are hits or were offered to the cache
	sched       int // tokens scheduled in the current step

	everAdmitted bool
	firstToken   bool
	cachedTokens int // prefix hit at the first admission
	preemptions  int
}

// length is the sequence's current length: its prompt and what it has
// generated.
func (s *seq) length() int { return s.prompt + s.generated }

func (e *Engine) checkRequest(r Request) error {
	bs := e.cfg.BlockSize
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: empty id", ErrBadRequest)
	case r.PromptTokens < 1:
		return fmt.Errorf("%w %q: prompt tokens %d, want >= 1", ErrBadRequest, r.ID, r.PromptTokens)
	case r.OutputTokens < 1:
		return fmt.Errorf("%w %q: output tokens %d, want >= 1", ErrBadRequest, r.ID, r.OutputTokens)
	}
	// The last generated token is sampled, never computed into KV.
	maxTokens := r.PromptTokens + r.OutputTokens - 1
	if len(r.BlockHashes) > (r.PromptTokens+r.OutputTokens)/bs {
		return fmt.Errorf("%w %q: %d block hashes for %d tokens of %d-token blocks",
			ErrBadRequest, r.ID, len(r.BlockHashes), r.PromptTokens+r.OutputTokens, bs)
	}
	if need := (maxTokens + bs - 1) / bs; need > e.cfg.NumBlocks {
		return fmt.Errorf("%w: request %q needs %d KV blocks, the engine has %d", ErrTooLarge, r.ID, need, e.cfg.NumBlocks)
	}
	if !e.cfg.EnableChunkedPrefill && maxTokens > e.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("%w: request %q may need %d tokens in one step without chunked prefill, the budget is %d",
			ErrTooLarge, r.ID, maxTokens, e.cfg.MaxNumBatchedTokens)
	}
	if _, dup := e.byID[r.ID]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateID, r.ID)
	}
	return nil
}
