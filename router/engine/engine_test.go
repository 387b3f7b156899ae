package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTTFTOnAnIdleEngineIsThePrefillTime(t *testing.T) {
	p := DefaultProfile()
	ctx := p
	ctx.PrefillContext = 1e-6 // ms per (new token x context token)
	for _, tc := range []struct {
		name    string
		prompt  int
		chunked bool
		profile Profile
		chunks  []int // the prefill steps' new tokens
	}{
		{"one block", 64, true, p, []int{64}},
		{"partial block", 100, true, p, []int{100}},
		{"whole budget", 8192, true, p, []int{8192}},
		{"chunked", 20000, true, p, []int{8192, 8192, 3616}},
		{"unchunked", 8000, false, p, []int{8000}},
		{"chunked with context cost", 20000, true, ctx, []int{8192, 8192, 3616}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.EnableChunkedPrefill = tc.chunked
			cfg.Profile = tc.profile
			e := newEngine(t, cfg)
			require.NoError(t, e.Add(Request{ID: "a", BlockHashes: chain(1, tc.prompt/64), PromptTokens: tc.prompt, OutputTokens: 1}))
			steps := run(t, e, 100)

			var want time.Duration
			done := 0
			for _, n := range tc.chunks {
				want += msToDuration(tc.profile.PrefillMs(n) + tc.profile.PrefillContext*float64(n*done))
				done += n
			}
			assert.Equal(t, want, ttft(steps, "a"))
			require.Len(t, steps, len(tc.chunks))
			for i, n := range tc.chunks {
				assert.Equal(t, n, steps[i].PrefillTokens, "step %d", i)
			}
			require.Len(t, steps[len(steps)-1].Finished, 1)
			assert.Equal(t, Finished{ID: "a", PromptTokens: tc.prompt, OutputTokens: 1}, steps[len(steps)-1].Finished[0])
		})
	}
	// The numbers, pinned: 1,000 tokens on the mocker's profile.
	e := newEngine(t, DefaultConfig())
	require.NoError(t, e.Add(Request{ID: "a", PromptTokens: 1000, OutputTokens: 1}))
	assert.Equal(t, time.Duration(32105859), step(t, e).Duration)
}

func TestACachedPrefixIsNotRecomputed(t *testing.T) {
	base := chain(1, 10) // 640 tokens
	for _, tc := range []struct {
		name       string
		hashes     []uint64
		prompt     int
		wantCached int
	}{
		{"same prompt: all but the last block", base, 640, 576},
		{"longer prompt", append(slices.Clone(base), chain(2, 2)...), 800, 640},
		{"shared half", fork(base, 5, 3, 10), 640, 320},
		{"nothing shared", chain(4, 10), 640, 0},
		{"a partial last block", base, 650, 640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, DefaultConfig())
			require.NoError(t, e.Add(Request{ID: "warm", BlockHashes: base, PromptTokens: 640, OutputTokens: 1}))
			run(t, e, 10)
			require.NoError(t, e.Add(Request{ID: "b", BlockHashes: tc.hashes, PromptTokens: tc.prompt, OutputTokens: 1}))
			r := step(t, e)
			require.Equal(t, []Admission{{ID: "b", CachedTokens: tc.wantCached}}, r.Admitted)
			assert.Equal(t, tc.prompt-tc.wantCached, r.PrefillTokens)
			assert.Equal(t, msToDuration(DefaultProfile().PrefillMs(tc.prompt-tc.wantCached)), r.Duration)
			require.Len(t, r.Finished, 1)
			assert.Equal(t, tc.wantCached, r.Finished[0].CachedTokens)
			st := e.Stats()
			assert.Equal(t, uint64(640+tc.prompt), st.PrefixQueries)
			assert.Equal(t, uint64(tc.wantCached), st.PrefixHits)
		})
	}
}

func TestABatchStepTakesTheFormulasTime(t *testing.T) {
	cfg := smallConfig(1000, 16)
	p := cfg.Profile
	e := newEngine(t, cfg)
	// Three requests of 160 tokens: one prefill step of 480 tokens.
	for i := range 3 {
		require.NoError(t, e.Add(Request{ID: fmt.Sprint(i), BlockHashes: chain(uint64(i+1), 10), PromptTokens: 160, OutputTokens: 5}))
	}
	r := step(t, e)
	assert.Equal(t, 480, r.PrefillTokens)
	assert.Zero(t, r.DecodeSeqs)
	assert.Equal(t, msToDuration(p.PrefillMs(480)), r.Duration)
	assert.Len(t, r.FirstTokens, 3)

	// Decode only: 3 sequences of 161 tokens, 11 blocks each in use.
	r = step(t, e)
	assert.Equal(t, 3, r.DecodeSeqs)
	assert.Zero(t, r.PrefillTokens)
	assert.InDelta(t, 33.0/1000, r.KVUsage, 1e-12)
	assert.Equal(t, msToDuration(p.DecodeMs(33.0/1000)), r.Duration)

	// Mixed: a new 100-token prompt joins the three decodes; the step is
	// the sum of its prefill and decode times (the mocker's two phases).
	require.NoError(t, e.Add(Request{ID: "new", PromptTokens: 100, OutputTokens: 1}))
	r = step(t, e)
	assert.Equal(t, 3, r.DecodeSeqs)
	assert.Equal(t, 100, r.PrefillTokens)
	assert.InDelta(t, 40.0/1000, r.KVUsage, 1e-12) // 33 + 7 blocks for the new prompt
	assert.Equal(t, msToDuration(p.PrefillMs(100)+p.DecodeMs(40.0/1000)), r.Duration)
}

func TestPrefillPerSequenceSumsEachChunk(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Profile.PrefillPerSequence = true
	e := newEngine(t, cfg)
	require.NoError(t, e.Add(Request{ID: "a", PromptTokens: 300, OutputTokens: 1}))
	require.NoError(t, e.Add(Request{ID: "b", PromptTokens: 500, OutputTokens: 1}))
	p := cfg.Profile
	assert.Equal(t, msToDuration(p.PrefillMs(300)+p.PrefillMs(500)), step(t, e).Duration)
}

func TestTheTokenBudgetIsShared(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumBatchedTokens = 1000
	e := newEngine(t, cfg)
	require.NoError(t, e.Add(Request{ID: "a", PromptTokens: 700, OutputTokens: 3}))
	require.NoError(t, e.Add(Request{ID: "b", PromptTokens: 700, OutputTokens: 3}))
	r := step(t, e)
	assert.Equal(t, 1000, r.PrefillTokens) // a whole, b's first 300
	assert.Equal(t, []string{"a"}, r.FirstTokens)
	r = step(t, e)
	assert.Equal(t, 400, r.PrefillTokens) // b's rest
	assert.Equal(t, 1, r.DecodeSeqs)      // a
	assert.Equal(t, []string{"a", "b"}, r.Generated)
	assert.Equal(t, []string{"b"}, r.FirstTokens)
}

func TestMaxNumSeqsIsRespected(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 2
	e := newEngine(t, cfg)
	for i := range 5 {
		require.NoError(t, e.Add(Request{ID: fmt.Sprint(i), PromptTokens: 50, OutputTokens: 4}))
	}
	r := step(t, e)
	assert.Len(t, r.Admitted, 2)
	assert.Equal(t, 2, e.Stats().Running)
	assert.Equal(t, 3, e.Stats().Waiting)
	steps := run(t, e, 100) // checkInvariants asserts running <= MaxNumSeqs at every step
	finished := 0
	for _, s := range steps {
		finished += len(s.Finished)
	}
	assert.Equal(t, 5, finished)
}

func TestRunningOutOfKVPreemptsTheNewest(t *testing.T) {
	// 6 blocks of 4 tokens; two requests of 8-token prompts (2 blocks
	// each) that grow to 8+10 tokens: at their 4th block the KV is full.
	e := newEngine(t, smallConfig(6, 4))
	require.NoError(t, e.Add(Request{ID: "old", BlockHashes: chain(1, 2), PromptTokens: 8, OutputTokens: 10}))
	require.NoError(t, e.Add(Request{ID: "new", BlockHashes: chain(2, 2), PromptTokens: 8, OutputTokens: 10}))
	steps := run(t, e, 200)

	var preempted []string
	finished := map[string]Finished{}
	for _, s := range steps {
		preempted = append(preempted, s.Preempted...)
		for _, f := range s.Finished {
			finished[f.ID] = f
		}
	}
	require.NotEmpty(t, preempted)
	assert.Equal(t, "new", preempted[0], "the most recently admitted goes first (LIFO)")
	require.Len(t, finished, 2, "the preempted request still finishes")
	assert.Equal(t, 10, finished["new"].OutputTokens)
	assert.Positive(t, finished["new"].Preemptions)
	assert.Zero(t, finished["old"].Preemptions)
	assert.Equal(t, uint64(len(preempted)), e.Stats().Preemptions)
}

func TestAPreemptedRequestRecomputesHittingItsOwnBlocks(t *testing.T) {
	e := newEngine(t, smallConfig(6, 4))
	require.NoError(t, e.Add(Request{ID: "old", BlockHashes: chain(1, 2), PromptTokens: 8, OutputTokens: 10}))
	require.NoError(t, e.Add(Request{ID: "new", BlockHashes: chain(2, 2), PromptTokens: 8, OutputTokens: 10}))
	var readmitted bool
	for i := 0; i < 200 && !e.Idle(); i++ {
		r := step(t, e)
		if len(r.Preempted) > 0 {
			continue
		}
		st := e.Stats()
		// "new" was preempted at 13 tokens (8 + 5 generated), its blocks
		// freed deepest first: "old" took its decode block, then, growing
		// to its 5th block, evicted new's second prompt block. New waits for
		// blocks until old finishes, and is readmitted with 13 tokens, its
		// first prompt block still a hit.
		if st.PrefixQueries > 16 {
			readmitted = true
			assert.Equal(t, uint64(16+13), st.PrefixQueries)
			assert.Equal(t, uint64(4), st.PrefixHits)
			break
		}
	}
	assert.True(t, readmitted)
}

func TestEvictionIsLRUDeepestFirst(t *testing.T) {
	// 8 blocks of 4 tokens. "a" (4 blocks) finishes, then "b" (4 blocks):
	// all 8 blocks are cached and free, a's older. A 4-block request must
	// evict a's blocks, deepest first, and leave b's.
	e := newEngine(t, smallConfig(8, 4))
	a, b, c := chain(1, 4), chain(2, 4), chain(3, 3)
	require.NoError(t, e.Add(Request{ID: "a", BlockHashes: a, PromptTokens: 16, OutputTokens: 1}))
	run(t, e, 10)
	require.NoError(t, e.Add(Request{ID: "b", BlockHashes: b, PromptTokens: 16, OutputTokens: 1}))
	run(t, e, 10)
	require.Equal(t, 8, e.Stats().CachedBlocks)

	require.NoError(t, e.Add(Request{ID: "c", BlockHashes: c, PromptTokens: 13, OutputTokens: 1}))
	r := step(t, e)
	assert.Equal(t, []uint64{a[3], a[2], a[1], a[0]}, r.Removed)

	// b's prefix still hits in full (but for its last token's block).
	require.NoError(t, e.Add(Request{ID: "b2", BlockHashes: b, PromptTokens: 16, OutputTokens: 1}))
	r = step(t, e)
	require.Len(t, r.Admitted, 1)
	assert.Equal(t, 12, r.Admitted[0].CachedTokens)
}

func TestStoredEventsChainAndRemovedFollowStored(t *testing.T) {
	cfg := smallConfig(64, 16)
	cfg.MaxNumBatchedTokens = 40 // chunks of 40 tokens: blocks complete across steps
	e := newEngine(t, cfg)
	hs := chain(7, 6)
	require.NoError(t, e.Add(Request{ID: "a", BlockHashes: hs, PromptTokens: 100, OutputTokens: 2}))
	steps := run(t, e, 20)
	var got []BlockStored
	for _, s := range steps {
		got = append(got, s.Stored...)
	}
	assert.Equal(t, []BlockStored{
		{RequestID: "a", FirstBlock: 0, Hashes: hs[0:2]},
		{RequestID: "a", FirstBlock: 2, Parent: hs[1], HasParent: true, Hashes: hs[2:5]},
		{RequestID: "a", FirstBlock: 5, Parent: hs[4], HasParent: true, Hashes: hs[5:6]},
	}, got)
}

func TestDecodeBlocksAreCachedOnlyWithHashes(t *testing.T) {
	// 32 prompt tokens + 40 generated: blocks 2..4 are filled by decode.
	for _, tc := range []struct {
		name   string
		hashes []uint64
		stored int
	}{
		{"prompt hashes only", chain(1, 2), 2},
		{"hashes of the generated blocks too", chain(1, 4), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, smallConfig(64, 16))
			require.NoError(t, e.Add(Request{ID: "a", BlockHashes: tc.hashes, PromptTokens: 32, OutputTokens: 40}))
			run(t, e, 100)
			assert.Equal(t, tc.stored, e.Stats().CachedBlocks)
		})
	}
}

func TestADuplicateBlockIsNotCachedTwice(t *testing.T) {
	// Two identical prompts admitted together both compute the blocks: the
	// second copy stays uncached, so every Stored has one Removed.
	e := newEngine(t, smallConfig(64, 16))
	hs := chain(1, 4)
	require.NoError(t, e.Add(Request{ID: "a", BlockHashes: hs, PromptTokens: 64, OutputTokens: 1}))
	require.NoError(t, e.Add(Request{ID: "b", BlockHashes: hs, PromptTokens: 64, OutputTokens: 1}))
	r := step(t, e)
	require.Len(t, r.Stored, 1)
	assert.Equal(t, "a", r.Stored[0].RequestID)
	assert.Equal(t, 4, e.Stats().CachedBlocks)
}

func TestAbort(t *testing.T) {
	e := newEngine(t, smallConfig(16, 4))
	require.NoError(t, e.Add(Request{ID: "run", BlockHashes: chain(1, 2), PromptTokens: 8, OutputTokens: 50}))
	step(t, e)
	require.NoError(t, e.Add(Request{ID: "wait", PromptTokens: 8, OutputTokens: 5}))
	assert.True(t, e.Abort("wait"))
	assert.True(t, e.Abort("run"))
	assert.False(t, e.Abort("run"))
	assert.True(t, e.Idle())
	st := e.Stats()
	assert.Zero(t, st.UsedBlocks)
	assert.Equal(t, 2, st.CachedBlocks, "an aborted request's computed blocks stay cached")
	assert.Equal(t, uint64(2), st.Aborted)
	checkInvariants(t, e)
}

func TestAddRefusesBadRequests(t *testing.T) {
	cfg := smallConfig(4, 4)
	cfg.MaxNumBatchedTokens = 10
	e := newEngine(t, cfg)
	require.NoError(t, e.Add(Request{ID: "x", PromptTokens: 4, OutputTokens: 1}))
	for name, tc := range map[string]struct {
		r    Request
		want error
	}{
		"no id":           {Request{PromptTokens: 1, OutputTokens: 1}, ErrBadRequest},
		"empty prompt":    {Request{ID: "a", OutputTokens: 1}, ErrBadRequest},
		"no output":       {Request{ID: "a", PromptTokens: 1}, ErrBadRequest},
		"too many hashes": {Request{ID: "a", BlockHashes: chain(1, 3), PromptTokens: 8, OutputTokens: 1}, ErrBadRequest},
		"too many blocks": {Request{ID: "a", PromptTokens: 16, OutputTokens: 2}, ErrTooLarge},
		"duplicate":       {Request{ID: "x", PromptTokens: 1, OutputTokens: 1}, ErrDuplicateID},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, e.Add(tc.r), tc.want)
		})
	}
	cfg.EnableChunkedPrefill = false
	e = newEngine(t, cfg)
	assert.ErrorIs(t, e.Add(Request{ID: "a", PromptTokens: 11, OutputTokens: 1}), ErrTooLarge)
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = 0, -1, 0, 0
	err := cfg.Validate()
	require.Error(t, err)
	for _, s := range []string{"num blocks", "block size", "max num seqs", "max num batched tokens"} {
		assert.Contains(t, err.Error(), s)
	}
}

func TestResetPrefixCache(t *testing.T) {
	e := newEngine(t, smallConfig(16, 4))
	require.NoError(t, e.Add(Request{ID: "a", BlockHashes: chain(1, 2), PromptTokens: 8, OutputTokens: 3}))
	step(t, e)
	assert.ErrorIs(t, e.ResetPrefixCache(), ErrBlocksInUse)
	run(t, e, 10)
	require.NoError(t, e.ResetPrefixCache())
	clear(views[e]) // AllBlocksCleared
	assert.Zero(t, e.Stats().CachedBlocks)
	checkInvariants(t, e)
}

func TestSameInputsSameSteps(t *testing.T) {
	steps := func() []StepResult {
		e := newEngine(t, smallConfig(200, 16))
		randomLoad(t, e, rand.New(rand.NewPCG(1, 2)), 60)
		return run(t, e, 100000)
	}
	a, b := steps(), steps()
	require.Equal(t, a, b)
	var pre int
	for _, s := range a {
		pre += len(s.Preempted)
	}
	assert.Positive(t, pre, "the load should be heavy enough to preempt")
}

func TestARandomLoadDrainsConsistently(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks int
		seqs   int
		chunk  bool
	}{
		{"tight KV", 120, 256, true},
		{"roomy KV", 4000, 256, true},
		{"few seqs", 500, 3, true},
		{"unchunked", 300, 16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(tc.blocks, 16)
			cfg.MaxNumSeqs = tc.seqs
			cfg.EnableChunkedPrefill = tc.chunk
			cfg.MaxNumBatchedTokens = 512
			e := newEngine(t, cfg)
			randomLoad(t, e, rand.New(rand.NewPCG(3, uint64(tc.blocks))), 80)
			steps := run(t, e, 100000)
			done := map[string]bool{}
			for _, s := range steps {
				for _, f := range s.Finished {
					require.False(t, done[f.ID])
					done[f.ID] = true
				}
			}
			assert.Len(t, done, 80)
			assert.Equal(t, uint64(80), e.Stats().Finished)
		})
	}
}
