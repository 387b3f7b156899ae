package kvmock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"
)

// Engine is the simulated engine: a KV cache, a FIFO of waiting requests,
// at most MaxRunning running ones, and a time model.
//
// Time: prefill is one lane (one GPU's compute): a request's uncached
// prompt tokens are computed at PrefillTokensPerSec after every earlier
// admitted request's; its first token comes out when its prefill ends.
// Decode runs in parallel for all running requests (that is what batching
// buys), one token every DecodeTimePerToken.
type Engine struct {
	cfg   Config
	tok   Tokenizer
	ids   BlockIDs
	clock simClock

	mu               sync.Mutex
	cache            *Cache
	waiting          []*waiter // FIFO; only the head may be admitted
	running          int
	prefillBusyUntil float64 // simulated seconds
	stats            EngineStats
}

// EngineStats counts what the engine did since it started.
type EngineStats struct {
	Requests        uint64 `json:"requests"` // admitted
	PromptTokens    uint64 `json:"prompt_tokens"`
	CachedTokens    uint64 `json:"cached_tokens"` // prompt tokens reused from the cache
	GeneratedTokens uint64 `json:"generated_tokens"`
	Cancelled       uint64 `json:"cancelled"` // ended by the client before finishing
}

// EngineState is a snapshot for /kvmock/stats.
type EngineState struct {
	Running int         `json:"running"`
	Waiting int         `json:"waiting"`
	Cache   CacheStats  `json:"cache"`
	Stats   EngineStats `json:"stats"`
}

// NewEngine returns an engine; sink receives its KV events.
func NewEngine(cfg Config, ids BlockIDs, sink EventSink) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kvmock config: %w", err)
	}
	return &Engine{
		cfg:   cfg,
		tok:   NewTokenizer(cfg.VocabSize),
		ids:   ids,
		clock: newSimClock(cfg.Speedup),
		cache: NewCache(cfg.NumBlocks, cfg.BlockSize, sink),
	}, nil
}

// GenRequest is one generation request, already tokenized.
type GenRequest struct {
	Prompt    []uint32
	MaxTokens int
	Tag       SeqTag // LoRA adapter and cache salt; zero for neither
}

// Token is one generated token.
type Token struct {
	Index int // 0-based position in the output
	ID    uint32
	Text  string
}

// Timings is what kvmock reports about a request, in simulated time.
type Timings struct {
	PromptTokens int `json:"prompt_tokens"`
	CachedTokens int `json:"cached_tokens"` // reused from the prefix cache
	// QueueMs: waiting for admission (batch capacity, free blocks);
	// PrefillMs: waiting for the prefill lane plus computing the uncached
	// tokens; TTFTMs = QueueMs + PrefillMs.
	QueueMs   float64 `json:"queue_ms"`
	PrefillMs float64 `json:"prefill_ms"`
	TTFTMs    float64 `json:"ttft_ms"`
}

// Result is a finished (or cut short) generation.
type Result struct {
	Tokens       []Token
	FinishReason string // "length"
	Timings      Timings
}

// Errors the HTTP layer maps to 400: the request can never run.
var (
	ErrEmptyPrompt     = errors.New("the prompt is empty")
	ErrTooLong         = errors.New("request exceeds the model's context length")
	ErrTooManyBlocks   = errors.New("request needs more KV blocks than the engine has")
	ErrTokenOutOfVocab = errors.New("token id out of vocabulary")
	errBadMaxTokens    = errors.New("max_tokens must be at least 1")
)

// waiter is a request queued for admission.
type waiter struct {
	req         GenRequest
	ids         []Digest // the prompt's full blocks
	maxHits     int
	totalBlocks int
	arrival     float64

	ready chan struct{} // closed on admission
	// Set on admission, under Engine.mu.
	alloc      *Allocation
	admittedAt float64
	firstToken float64
}

// Validate checks a request against the engine's limits.
func (e *Engine) Validate(req GenRequest) error {
	if len(req.Prompt) == 0 {
		return ErrEmptyPrompt
	}
	if req.MaxTokens <= 0 {
		return fmt.Errorf("%w, got %d", errBadMaxTokens, req.MaxTokens)
	}
	for i, t := range req.Prompt {
		if int(t) >= e.cfg.VocabSize {
			return fmt.Errorf("%w: prompt[%d] = %d, vocabulary size %d", ErrTokenOutOfVocab, i, t, e.cfg.VocabSize)
		}
	}
	if n := len(req.Prompt) + req.MaxTokens; n > e.cfg.MaxModelLen {
		return fmt.Errorf("%w: maximum context length is %d tokens, this request asks for %d (%d in the prompt, %d to generate)",
			ErrTooLong, e.cfg.MaxModelLen, n, len(req.Prompt), req.MaxTokens)
	}
	if b := e.blocksFor(req); b > e.cfg.NumBlocks {
		return fmt.Errorf("%w: %d blocks needed, %d in the cache", ErrTooManyBlocks, b, e.cfg.NumBlocks)
	}
	return nil
}

func (e *Engine) blocksFor(req GenRequest) int {
	bs := e.cfg.BlockSize
	return (len(req.Prompt) + req.MaxTokens + bs - 1) / bs
}

// Generate runs req: it waits for admission, simulates prefill and decode
// in (scaled) real time and calls emit for each token as it is produced.
// When ctx ends (the client went away) or emit fails, the request stops
// and frees its slot and blocks; the tokens so far come back with the error.
func (e *Engine) Generate(ctx context.Context, req GenRequest, emit func(Token, Timings) error) (Result, error) {
	if err := e.Validate(req); err != nil {
		return Result{}, err
	}
	bs := e.cfg.BlockSize
	ids, err := appendChain(nil, e.ids, req.Tag, req.Prompt, bs)
	if err != nil {
		return Result{}, err
	}
	w := &waiter{
		req:         req,
		ids:         ids,
		maxHits:     (len(req.Prompt) - 1) / bs, // the last prompt token is always computed, as in vLLM
		totalBlocks: e.blocksFor(req),
		ready:       make(chan struct{}),
	}
	if err := e.admit(ctx, w); err != nil {
		return Result{}, err
	}
	var res Result
	cancelled := true
	defer func() { e.finish(w, len(res.Tokens), cancelled) }()

	tm := Timings{
		PromptTokens: len(req.Prompt),
		CachedTokens: w.alloc.Hits * bs,
		QueueMs:      simMs(w.admittedAt - w.arrival),
		PrefillMs:    simMs(w.firstToken - w.admittedAt),
		TTFTMs:       simMs(w.firstToken - w.arrival),
	}
	// Room for the output up front, within reason: max_tokens is the
	// client's number, and a request cut short never uses it all.
	room := min(req.MaxTokens, 4096)
	res = Result{Timings: tm, Tokens: make([]Token, 0, room)}
	seq := slices.Grow(slices.Clone(req.Prompt), room)
	seed := promptSeed(req.Prompt)
	step := e.cfg.DecodeTimePerToken.Seconds()
	for i := range req.MaxTokens {
		if err := e.clock.sleepUntil(ctx, w.firstToken+float64(i)*step); err != nil {
			return res, err
		}
		id, text := e.tok.outputToken(seed, i)
		seq = append(seq, id)
		if e.cfg.StoreDecodeBlocks && len(seq)%bs == 0 {
			if err := e.storeDecodeBlock(w, seq); err != nil {
				return res, err
			}
		}
		tok := Token{Index: i, ID: id, Text: text}
		res.Tokens = append(res.Tokens, tok)
		if err := emit(tok, tm); err != nil {
			return res, err
		}
	}
	res.FinishReason = "length"
	cancelled = false
	return res, nil
}

// admit queues w and waits for its turn.
func (e *Engine) admit(ctx context.Context, w *waiter) error {
	e.mu.Lock()
	w.arrival = e.clock.now()
	e.waiting = append(e.waiting, w)
	e.admitLocked(w.arrival) // admitted at once: no queueing time at all
	e.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-w.ready: // admitted while we were giving up: hand it back
		e.releaseLocked(w)
	default:
		e.waiting = slices.DeleteFunc(e.waiting, func(x *waiter) bool { return x == w })
		e.admitLocked(e.clock.now()) // the new head may fit
	}
	e.stats.Cancelled++
	return ctx.Err()
}

// admitLocked admits waiting requests in arrival order while the head
// fits; now is the simulated time of admission.
func (e *Engine) admitLocked(now float64) {
	bs := e.cfg.BlockSize
	for len(e.waiting) > 0 && e.running < e.cfg.MaxRunning {
		w := e.waiting[0]
		alloc, err := e.cache.Allocate(w.ids, w.maxHits, w.totalBlocks)
		if err != nil {
			return // ErrCacheFull: wait for a release (Validate ruled out the rest)
		}
		e.waiting = e.waiting[1:]
		e.running++
		w.alloc = alloc

		// vLLM caches a prompt's full blocks when it schedules their
		// computation, so their BlockStored goes out now.
		hits := alloc.Hits
		var parent *Digest
		if hits > 0 {
			parent = &w.ids[hits-1]
		}
		e.cache.Store(alloc, hits, w.ids[hits:], parent, w.req.Prompt[hits*bs:len(w.ids)*bs], w.req.Tag)

		uncached := len(w.req.Prompt) - hits*bs
		start := max(now, e.prefillBusyUntil)
		w.admittedAt = now
		w.firstToken = start + float64(uncached)/e.cfg.PrefillTokensPerSec
		e.prefillBusyUntil = w.firstToken

		e.stats.Requests++
		e.stats.PromptTokens += uint64(len(w.req.Prompt))
		e.stats.CachedTokens += uint64(hits * bs)
		close(w.ready)
	}
}

// storeDecodeBlock caches the block that seq's last token just filled.
func (e *Engine) storeDecodeBlock(w *waiter, seq []uint32) error {
	bs := e.cfg.BlockSize
	k := len(seq)/bs - 1 // the block just filled
	parent := e.ids.Root()
	if k > 0 {
		parent = w.ids[k-1]
	}
	id, err := e.ids.Next(parent, seq[k*bs:], w.req.Tag.hashKeys(k))
	if err != nil {
		return fmt.Errorf("block id of generated block %d: %w", k, err)
	}
	w.ids = append(w.ids, id)
	e.mu.Lock()
	defer e.mu.Unlock()
	var p *Digest
	if k > 0 {
		p = &parent
	}
	e.cache.Store(w.alloc, k, []Digest{id}, p, seq[k*bs:], w.req.Tag)
	return nil
}

// finish frees w's slot and blocks and lets the next requests in.
func (e *Engine) finish(w *waiter, generated int, cancelled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.GeneratedTokens += uint64(generated)
	if cancelled {
		e.stats.Cancelled++
	}
	e.releaseLocked(w)
}

func (e *Engine) releaseLocked(w *waiter) {
	e.cache.Release(w.alloc)
	e.running--
	e.admitLocked(e.clock.now())
}

// ResetPrefixCache drops every cached block (vLLM's /reset_prefix_cache).
func (e *Engine) ResetPrefixCache() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cache.Reset()
}

// State is a snapshot of the engine.
func (e *Engine) State() EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return EngineState{Running: e.running, Waiting: len(e.waiting), Cache: e.cache.Stats(), Stats: e.stats}
}

// Tokenizer is the engine's tokenizer.
func (e *Engine) Tokenizer() Tokenizer { return e.tok }

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// simMs converts simulated seconds to milliseconds, rounded to the
// microsecond (finer digits are float noise, not model).
func simMs(seconds float64) float64 {
	return math.Round(seconds*1e6) / 1e3
}

// promptSeed seeds the deterministic "model": the same prompt generates
// the same tokens.
func promptSeed(prompt []uint32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, t := range prompt {
		binary.LittleEndian.PutUint32(b[:], t)
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}
