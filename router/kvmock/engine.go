package kvmock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/kvhash/kvhash/router/engine"
)

// Engine is the simulated engine: router/engine's model of a vLLM V1
// engine (scheduler, KV block pool with the prefix cache, step times) run
// on a real clock. A driver goroutine, alive while there is work, runs a
// step, sleeps its duration (divided by Speedup), then delivers what the
// step did: KV events to the sink, tokens to the requests.
type Engine struct {
	cfg   Config
	tok   Tokenizer
	ids   BlockIDs
	sink  EventSink
	clock simClock

	mu       sync.Mutex
	core     *engine.Engine
	live     map[string]*liveReq // by engine request id
	gone     []string            // left by their clients during a step: dropped after it
	nextID   uint64
	driving  bool // the driver goroutine runs
	stepping bool // a step is in flight: its events are not delivered yet
	// finishing is how many requests the step in flight finishes: the
	// engine model has freed them, but they run until the step ends.
	finishing int
	simNow    float64 // simulated seconds: the end of the last step
	wireIDs   map[uint64]Digest
	stats     EngineStats
}

// EngineStats counts what the engine did since it started.
type EngineStats struct {
	Requests        uint64 `json:"requests"` // admitted
	PromptTokens    uint64 `json:"prompt_tokens"`
	CachedTokens    uint64 `json:"cached_tokens"` // prompt tokens reused from the cache
	GeneratedTokens uint64 `json:"generated_tokens"`
	Cancelled       uint64 `json:"cancelled"`   // ended by the client before finishing
	Finished        uint64 `json:"finished"`    // produced all their tokens
	Preemptions     uint64 `json:"preemptions"` // running requests sent back to wait (KV full)
	PrefixQueries   uint64 `json:"prefix_queries"`
	PrefixHits      uint64 `json:"prefix_hits"`
}

// CacheStats is a snapshot of the KV block pool.
type CacheStats struct {
	NumBlocks    int `json:"num_blocks"`    // physical blocks
	FreeBlocks   int `json:"free_blocks"`   // referenced by no running request (cached or empty)
	CachedBlocks int `json:"cached_blocks"` // holding a block id (in use or free)
	UsedBlocks   int `json:"used_blocks"`   // referenced by a running request
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
	core, err := engine.New(cfg.engineConfig())
	if err != nil {
		return nil, fmt.Errorf("kvmock config: %w", err)
	}
	if sink == nil {
		sink = discardEvents{}
	}
	return &Engine{
		cfg:     cfg,
		tok:     NewTokenizer(cfg.VocabSize),
		ids:     ids,
		sink:    sink,
		clock:   newSimClock(cfg.Speedup),
		core:    core,
		live:    make(map[string]*liveReq),
		wireIDs: make(map[uint64]Digest),
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
	// QueueMs: from arrival to the start of the step that first scheduled
	// the request; PrefillMs: from then to the end of the step that
	// produced its first token (its prefill chunks and the steps it shared);
	// TTFTMs = QueueMs + PrefillMs.
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

// ErrBlocksInUse: the prefix cache cannot be reset while requests run.
var ErrBlocksInUse = errors.New("KV blocks are in use by running requests")

// liveReq is a request in the engine, as its HTTP handler waits on it.
type liveReq struct {
	id      string
	req     GenRequest
	seq     []uint32 // the prompt, then the tokens it generates (known up front: the "model" is deterministic)
	digests []Digest // the ids of seq's full blocks that are cached when computed
	arrival float64

	// Under Engine.mu, set by the driver.
	admitted   float64
	firstToken float64
	cached     int
	produced   int
	finished   bool
	notify     chan struct{} // one pending wake-up
}

func (l *liveReq) timings() Timings {
	// A driver running behind the wall clock may start a step before a
	// request's (wall-clock) arrival: the queue is then 0 and the prefill
	// still the model's, from the step's start.
	queue := max(0, l.admitted-l.arrival)
	prefill := l.firstToken - l.admitted
	return Timings{
		PromptTokens: len(l.req.Prompt),
		CachedTokens: l.cached,
		QueueMs:      simMs(queue),
		PrefillMs:    simMs(prefill),
		TTFTMs:       simMs(queue) + simMs(prefill),
	}
}

func (l *liveReq) wake() {
	select {
	case l.notify <- struct{}{}:
	default:
	}
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
	bs := e.cfg.BlockSize
	if b := (len(req.Prompt) + req.MaxTokens + bs - 1) / bs; b > e.cfg.NumBlocks {
		return fmt.Errorf("%w: %d blocks needed, %d in the cache", ErrTooManyBlocks, b, e.cfg.NumBlocks)
	}
	return nil
}

// Generate runs req: it queues it in the engine and calls emit for each
// token as the engine's steps produce it, in (scaled) real time. When ctx
// ends (the client went away) or emit fails, the request is aborted and
// its blocks freed; the tokens so far come back with the error.
func (e *Engine) Generate(ctx context.Context, req GenRequest, emit func(Token, Timings) error) (Result, error) {
	if err := e.Validate(req); err != nil {
		return Result{}, err
	}
	l, err := e.prepare(req)
	if err != nil {
		return Result{}, err
	}
	e.mu.Lock()
	e.nextID++
	l.id = strconv.FormatUint(e.nextID, 10)
	l.arrival = e.clock.now()
	hashes := make([]uint64, len(l.digests))
	for i, d := range l.digests {
		hashes[i] = engineHash(d)
	}
	if err := e.core.Add(engine.Request{ID: l.id, BlockHashes: hashes, PromptTokens: len(req.Prompt), OutputTokens: req.MaxTokens}); err != nil {
		e.mu.Unlock()
		return Result{}, fmt.Errorf("kvmock engine: %w", err)
	}
	e.live[l.id] = l
	if !e.driving {
		// Simulated time follows the wall clock only across idle periods:
		// the first step after one starts at this arrival. While busy it
		// advances by the model's step times alone, so timer jitter scaled
		// by Speedup never enters reported times.
		e.simNow = max(e.simNow, l.arrival)
		e.driving = true
		go e.drive()
	}
	e.mu.Unlock()

	seed := promptSeed(req.Prompt)
	res := Result{Tokens: make([]Token, 0, min(req.MaxTokens, 4096))}
	for {
		e.mu.Lock()
		produced, finished, tm := l.produced, l.finished, l.timings()
		e.mu.Unlock()
		for i := len(res.Tokens); i < produced; i++ {
			id, text := e.tok.outputToken(seed, i)
			tok := Token{Index: i, ID: id, Text: text}
			res.Tokens = append(res.Tokens, tok)
			res.Timings = tm
			if err := emit(tok, tm); err != nil {
				e.cancel(l)
				return res, err
			}
		}
		if finished {
			res.FinishReason = "length"
			return res, nil
		}
		select {
		case <-l.notify:
		case <-ctx.Done():
			e.cancel(l)
			return res, ctx.Err()
		}
	}
}

// prepare computes what the engine needs to know of req: its whole
// sequence and its blocks' ids (the generated blocks' too, with
// StoreDecodeBlocks, as vLLM caches them).
func (e *Engine) prepare(req GenRequest) (*liveReq, error) {
	seq := make([]uint32, len(req.Prompt), len(req.Prompt)+req.MaxTokens)
	copy(seq, req.Prompt)
	named := len(req.Prompt)
	if e.cfg.StoreDecodeBlocks {
		seed := promptSeed(req.Prompt)
		for i := range req.MaxTokens {
			id, _ := e.tok.outputToken(seed, i)
			seq = append(seq, id)
		}
		named = len(seq)
	}
	digests, err := appendChain(nil, e.ids, req.Tag, seq[:named], e.cfg.BlockSize)
	if err != nil {
		return nil, err
	}
	return &liveReq{req: req, seq: seq, digests: digests, notify: make(chan struct{}, 1)}, nil
}

// cancel aborts l in the engine (if it is still there) for a client that
// left.
func (e *Engine) cancel(l *liveReq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.core.Abort(l.id)
	if e.stepping {
		e.gone = append(e.gone, l.id) // the step in flight may still name it
	} else {
		delete(e.live, l.id)
	}
	e.stats.Cancelled++
}

// drive runs steps while the engine has work.
func (e *Engine) drive() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for !e.core.Idle() {
		start := e.simNow
		res := e.core.Step()
		e.simNow += res.Duration.Seconds()
		for _, a := range res.Admitted {
			if l := e.live[a.ID]; l != nil {
				l.admitted, l.cached = start, a.CachedTokens
			}
			e.stats.Requests++
			e.stats.CachedTokens += uint64(a.CachedTokens)
		}
		e.stepping, e.finishing = true, len(res.Finished)
		e.mu.Unlock()
		_ = e.clock.sleepUntil(context.Background(), e.simNow)
		e.mu.Lock()
		e.stepping, e.finishing = false, 0
		e.deliver(&res)
	}
	e.driving = false
}

// deliver publishes a step's KV events and hands its tokens out.
func (e *Engine) deliver(res *engine.StepResult) {
	for _, h := range res.Removed {
		d, ok := e.wireIDs[h]
		if !ok {
			continue
		}
		delete(e.wireIDs, h)
		e.sink.Emit(Event{Kind: EventBlockRemoved, Digests: []Digest{d}})
	}
	bs := e.cfg.BlockSize
	for _, st := range res.Stored {
		l := e.live[st.RequestID]
		if l == nil {
			continue
		}
		end := st.FirstBlock + len(st.Hashes)
		ev := Event{
			Kind:     EventBlockStored,
			Digests:  slices.Clone(l.digests[st.FirstBlock:end]),
			Tokens:   slices.Clone(l.seq[st.FirstBlock*bs : end*bs]),
			LoraName: l.req.Tag.LoraName,
			LoraID:   l.req.Tag.LoraID,
		}
		if st.FirstBlock > 0 {
			p := l.digests[st.FirstBlock-1]
			ev.Parent = &p
		}
		if l.req.Tag.hasKeys() {
			ev.ExtraKeys = make([][]string, 0, len(st.Hashes))
			for k := st.FirstBlock; k < end; k++ {
				ev.ExtraKeys = append(ev.ExtraKeys, l.req.Tag.eventKeys(k))
			}
		}
		for i, h := range st.Hashes {
			e.wireIDs[h] = ev.Digests[i]
		}
		e.sink.Emit(ev)
	}
	for _, id := range res.Generated {
		e.stats.GeneratedTokens++
		if l := e.live[id]; l != nil {
			l.produced++
			if l.produced == 1 {
				l.firstToken = e.simNow
			}
			l.wake()
		}
	}
	for _, f := range res.Finished {
		if l := e.live[f.ID]; l != nil {
			l.finished = true
			delete(e.live, f.ID)
			l.wake()
		}
	}
	for _, id := range e.gone {
		delete(e.live, id)
	}
	e.gone = e.gone[:0]
}

// ResetPrefixCache drops every cached block (vLLM's /reset_prefix_cache)
// and publishes AllBlocksCleared. Like vLLM it refuses while any block is
// in use, and kvmock also while a step's events are undelivered.
func (e *Engine) ResetPrefixCache() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stepping {
		return ErrBlocksInUse
	}
	if err := e.core.ResetPrefixCache(); err != nil {
		return ErrBlocksInUse
	}
	clear(e.wireIDs)
	e.sink.Emit(Event{Kind: EventAllBlocksCleared})
	return nil
}

// State is a snapshot of the engine.
func (e *Engine) State() EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.core.Stats()
	stats := e.stats
	stats.PromptTokens = st.PromptTokens
	stats.Finished = st.Finished
	stats.Preemptions = st.Preemptions
	stats.PrefixQueries, stats.PrefixHits = st.PrefixQueries, st.PrefixHits
	return EngineState{
		Running: st.Running + e.finishing,
		Waiting: st.Waiting,
		Cache: CacheStats{
			NumBlocks: st.NumBlocks, FreeBlocks: st.FreeBlocks,
			CachedBlocks: st.CachedBlocks, UsedBlocks: st.UsedBlocks,
		},
		Stats: stats,
	}
}

// Tokenizer is the engine's tokenizer.
func (e *Engine) Tokenizer() Tokenizer { return e.tok }

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// engineHash is the engine model's name for a block: the digest's last 8
// bytes, big-endian (vLLM's int form of the id, what a router indexes).
func engineHash(d Digest) uint64 {
	b := d.Bytes()
	if len(b) < 8 {
		var pad [8]byte
		copy(pad[8-len(b):], b)
		return binary.BigEndian.Uint64(pad[:])
	}
	return binary.BigEndian.Uint64(b[len(b)-8:])
}

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
