package kvmock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvhash/kvhash/router/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestEngine(t *testing.T, cfg Config) (*Engine, *recordSink) {
	t.Helper()
	sink := &recordSink{}
	e, err := NewEngine(cfg, newTestIDs(), sink)
	require.NoError(t, err)
	return e, sink
}

func run(t *testing.T, e *Engine, prompt []uint32, maxTokens int) Result {
	t.Helper()
	res, err := e.Generate(context.Background(), GenRequest{Prompt: prompt, MaxTokens: maxTokens}, func(Token, Timings) error { return nil })
	require.NoError(t, err)
	return res
}

func TestEngineCachedPromptIsFasterAndReported(t *testing.T) {
	cfg := testConfig()
	cfg.PrefillTokensPerSec = 1000 // 1 ms per uncached token
	e, _ := newTestEngine(t, cfg)
	prompt := seqTokens(10, 42) // 10 full blocks of 4 and 2 tokens

	cold := run(t, e, prompt, 2)
	warm := run(t, e, prompt, 2)

	assert.Equal(t, 42, cold.Timings.PromptTokens)
	assert.Equal(t, 0, cold.Timings.CachedTokens)
	assert.Equal(t, 40, warm.Timings.CachedTokens, "every full prompt block is reused")
	assert.InDelta(t, 42.0, cold.Timings.PrefillMs, 1.0, "42 uncached tokens at 1 token/ms")
	assert.InDelta(t, 2.0, warm.Timings.PrefillMs, 1.0, "2 uncached tokens")
	assert.Less(t, warm.Timings.TTFTMs, cold.Timings.TTFTMs)
	assert.Equal(t, cold.Tokens, warm.Tokens, "the same prompt generates the same tokens")
	assert.Equal(t, "length", warm.FinishReason)

	st := e.State()
	assert.Equal(t, uint64(2), st.Stats.Requests)
	assert.Equal(t, uint64(40), st.Stats.CachedTokens)
	assert.Equal(t, uint64(4), st.Stats.GeneratedTokens)
}

func TestEngineLastPromptTokenIsAlwaysComputed(t *testing.T) {
	e, _ := newTestEngine(t, testConfig())
	prompt := seqTokens(1, 8) // exactly two blocks
	run(t, e, prompt, 1)
	again := run(t, e, prompt, 1)
	assert.Equal(t, 4, again.Timings.CachedTokens, "the second block holds the last token: recomputed, as vLLM does")
}

func TestEngineEventsForPromptAndDecodeBlocks(t *testing.T) {
	cfg := testConfig()
	e, sink := newTestEngine(t, cfg)
	ids := newTestIDs()
	prompt := seqTokens(100, 6) // one full block, two tokens spare
	// 7 tokens generated: the KV of the first 6 is computed (the last
	// sampled token's never is, as in vLLM), filling block 1 (tokens 4..7)
	// and block 2 (8..11).
	res := run(t, e, prompt, 7)

	seq := append(append([]uint32(nil), prompt...), tokenIDs(res.Tokens)...)
	chain, err := appendChain(nil, ids, SeqTag{}, seq, 4)
	require.NoError(t, err)
	require.Len(t, chain, 3)
	assert.Equal(t, []Event{
		{Kind: EventBlockStored, Digests: chain[0:1], Tokens: seq[0:4]},
		{Kind: EventBlockStored, Digests: chain[1:2], Parent: &chain[0], Tokens: seq[4:8]},
		{Kind: EventBlockStored, Digests: chain[2:3], Parent: &chain[1], Tokens: seq[8:12]},
	}, sink.take())

	// With 6 tokens, token 11 is sampled but never computed: block 2 is
	// not cached.
	run(t, e, seqTokens(200, 6), 6)
	assert.Len(t, sink.take(), 2)

	cfg.StoreDecodeBlocks = false
	e2, sink2 := newTestEngine(t, cfg)
	run(t, e2, prompt, 7)
	assert.Len(t, sink2.take(), 1, "only the prompt block without decode-block caching")
}

func tokenIDs(ts []Token) []uint32 {
	out := make([]uint32, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func TestEngineQueuesBeyondCapacityAndCancelFreesTheSlot(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRunning = 1
	cfg.Speedup = 1
	cfg.DecodeTimePerToken = 20 * time.Millisecond // the first request runs 4 s unless cancelled
	e, _ := newTestEngine(t, cfg)

	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := e.Generate(ctx1, GenRequest{Prompt: seqTokens(1, 4), MaxTokens: 200}, func(tok Token, _ Timings) error {
			if tok.Index == 0 {
				close(started)
			}
			return nil
		})
		first <- err
	}()
	<-started

	second := make(chan Result, 1)
	go func() {
		cfg2 := GenRequest{Prompt: seqTokens(50, 4), MaxTokens: 1}
		res, err := e.Generate(context.Background(), cfg2, func(Token, Timings) error { return nil })
		assert.NoError(t, err)
		second <- res
	}()
	require.Eventually(t, func() bool { return e.State().Waiting == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 1, e.State().Running)

	cancel1() // the client goes away
	require.ErrorIs(t, <-first, context.Canceled)
	res := <-second
	assert.Positive(t, res.Timings.QueueMs, "the second request waited for the slot")
	require.Eventually(t, func() bool { return e.State().Running == 0 }, 5*time.Second, time.Millisecond)
	st := e.State()
	assert.Equal(t, 0, st.Waiting)
	assert.Equal(t, st.Cache.NumBlocks, st.Cache.FreeBlocks, "every block is free again")
	assert.Equal(t, uint64(1), st.Stats.Cancelled)
}

func TestEngineQueuesWhenBlocksRunOut(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 4
	cfg.Speedup = 1
	cfg.DecodeTimePerToken = 100 * time.Millisecond
	e, _ := newTestEngine(t, cfg)

	// 13 prompt tokens take all 4 blocks, for 2 decode steps (0.2 s).
	first := make(chan Result, 1)
	go func() { first <- run(t, e, seqTokens(1, 13), 3) }()
	require.Eventually(t, func() bool { return e.State().Running == 1 }, 5*time.Second, time.Millisecond)

	// A waiting request that gives up leaves the queue.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Generate(ctx2, GenRequest{Prompt: seqTokens(100, 4), MaxTokens: 1}, func(Token, Timings) error { return nil })
		done <- err
	}()
	require.Eventually(t, func() bool { return e.State().Waiting == 1 }, 5*time.Second, time.Millisecond)
	cancel2()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, 0, e.State().Waiting)

	// One that stays runs once the first has finished and freed its blocks.
	third := run(t, e, seqTokens(200, 4), 1)
	assert.Positive(t, third.Timings.QueueMs)
	assert.Len(t, (<-first).Tokens, 3)
}

func TestEngineEmitErrorStopsTheRequest(t *testing.T) {
	e, _ := newTestEngine(t, testConfig())
	boom := errors.New("client write failed")
	res, err := e.Generate(context.Background(), GenRequest{Prompt: seqTokens(1, 5), MaxTokens: 10}, func(tok Token, _ Timings) error {
		if tok.Index == 2 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	assert.Len(t, res.Tokens, 3)
	// The step in flight when the emit failed still counts what it
	// finishes as running until it ends (State): the engine is empty
	// once it has.
	require.Eventually(t, func() bool {
		st := e.State()
		return st.Running == 0 && st.Cache.FreeBlocks == st.Cache.NumBlocks
	}, 5*time.Second, time.Millisecond, "the stopped request left the engine: %+v", e.State())
}

func TestEngineRejectsRequestsThatCanNeverRun(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 4 // 16 tokens
	e, _ := newTestEngine(t, cfg)
	tests := []struct {
		name string
		req  GenRequest
		want error
	}{
		{"empty prompt", GenRequest{MaxTokens: 1}, ErrEmptyPrompt},
		{"no tokens to generate", GenRequest{Prompt: seqTokens(1, 2)}, errBadMaxTokens},
		{"token outside the vocabulary", GenRequest{Prompt: []uint32{1, 1000}, MaxTokens: 1}, ErrTokenOutOfVocab},
		{"longer than the model", GenRequest{Prompt: seqTokens(1, 250), MaxTokens: 10}, ErrTooLong},
		{"more blocks than the cache", GenRequest{Prompt: seqTokens(1, 16), MaxTokens: 1}, ErrTooManyBlocks},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Generate(context.Background(), tc.req, func(Token, Timings) error { return nil })
			require.ErrorIs(t, err, tc.want)
		})
	}
	assert.Equal(t, uint64(0), e.State().Stats.Requests)
}

func TestEngineASecondPromptWaitsForTheStepInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.PrefillTokensPerSec = 1 // the first prompt's 20 tokens: 20 s simulated, 1 s wall
	cfg.Speedup = 20
	e, _ := newTestEngine(t, cfg)
	prompt := seqTokens(1, 20)
	first := make(chan Result, 1)
	go func() { first <- run(t, e, prompt, 1) }()
	require.Eventually(t, func() bool { return e.State().Running == 1 }, 5*time.Second, time.Millisecond)

	// The same prompt right behind it: 16 tokens are reused (the first's
	// step cached their blocks), but it waits for that 20 s step to end,
	// then computes its last 4 tokens in 4 s.
	second := run(t, e, prompt, 1)
	assert.Equal(t, 16, second.Timings.CachedTokens)
	assert.InDelta(t, 4000.0, second.Timings.PrefillMs, 0.01)
	assert.Greater(t, second.Timings.TTFTMs, 20000.0)
	assert.LessOrEqual(t, second.Timings.TTFTMs, 24000.0)
	assert.InDelta(t, 20000.0, (<-first).Timings.TTFTMs, 0.01, "an idle engine: no queue, the model's prefill time")
}

func TestEngineRunsTheMockerProfile(t *testing.T) {
	cfg := testConfig()
	p := engine.DefaultProfile()
	cfg.Profile = &p
	cfg.Speedup = 100
	e, _ := newTestEngine(t, cfg)
	res := run(t, e, seqTokens(1, 100), 3)
	assert.InDelta(t, p.PrefillMs(100), res.Timings.TTFTMs, 0.001)
	assert.Zero(t, res.Timings.QueueMs)
}

func TestEnginePreemptsWhenKVRunsOutAndStillFinishes(t *testing.T) {
	cfg := testConfig()
	cfg.NumBlocks = 6 // two 8-token prompts growing to 18 tokens cannot both fit
	cfg.Speedup = 1
	cfg.DecodeTimePerToken = 10 * time.Millisecond
	e, sink := newTestEngine(t, cfg)
	results := make(chan Result, 2)
	for _, start := range []int{1, 500} {
		go func() {
			res, err := e.Generate(context.Background(), GenRequest{Prompt: seqTokens(start, 8), MaxTokens: 10}, func(Token, Timings) error { return nil })
			assert.NoError(t, err)
			results <- res
		}()
	}
	for range 2 {
		assert.Len(t, (<-results).Tokens, 10)
	}
	st := e.State()
	assert.Positive(t, st.Stats.Preemptions, "the newer request was preempted")
	assert.Equal(t, st.Cache.NumBlocks, st.Cache.FreeBlocks)

	// The events replay into the cache the engine holds.
	cached := map[Digest]bool{}
	for _, ev := range sink.take() {
		for _, d := range ev.Digests {
			switch ev.Kind {
			case EventBlockStored:
				require.False(t, cached[d], "stored twice")
				cached[d] = true
			case EventBlockRemoved:
				require.True(t, cached[d], "removed before stored")
				delete(cached, d)
			}
		}
	}
	assert.Len(t, cached, st.Cache.CachedBlocks)
}
