package indexer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/kvhash/kvhash/router/ingest"
)

// An engine with random block ids that stores a prompt first names the
// shared blocks; a healthy engine storing the same prompt afterwards then
// meets a hash mismatch. In enforce mode only the unstable engine is
// quarantined: the healthy one's ids are verified, so the mismatch is not
// its fault and its routing goes on.
func TestHashMismatchAgainstAnUnstableRankDoesNotQuarantineAVerifiedRank(t *testing.T) {
	f, _ := newVerifyFixture(t, func(o *Options) { o.Mode = core.ModeEnforce; o.QuarantineSettle = time.Second })
	f.addWorkerHash(1, "m", "auto")
	f.addWorkerHash(2, "m", "auto")
	unstable := randomRootEngine(t, enginehash.VLLMSHA256CBOR)
	healthy := vllmEngine(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)

	f.send(src(2, "m", 0), healthy.rootStore(t, tokens(500, 4)))
	require.Equal(t, VerdictVerified, f.rankInfo(2, 0).EngineHash.Verdict)

	// The unstable engine is caught once it names the same tokens
	// otherwise after a restart; its later stores still land in the tree
	// (it is scored by load only).
	f.send(src(1, "m", 0), unstable.rootStore(t, tokens(10, 8)))
	f.ix.HandleStream(src(1, "m", 0), ingest.StreamEvent{Kind: ingest.StreamRestarted})
	f.seq[core.Worker{ID: 1}] = 0
	restarted := randomRootEngine(t, enginehash.VLLMSHA256CBOR)
	f.send(src(1, "m", 0), restarted.rootStore(t, tokens(10, 8)))
	f.send(src(1, "m", 0), restarted.rootStore(t, tokens(10, 8)))
	require.Equal(t, StateQuarantined, f.rankInfo(1, 0).State)

	f.send(src(2, "m", 0), healthy.rootStore(t, tokens(10, 8)))
	ri := f.rankInfo(2, 0)
	assert.Equal(t, StateLive, ri.State, ri.Reason)
	assert.Zero(t, ri.Quarantines)
	assert.NotZero(t, ri.Violations[core.ViolationHashMismatch], "the mismatch is still counted")
}

// vLLM does not de-duplicate its prefix cache. Two requests that compute
// one uncached prefix in the same step each cache a copy, and each copy's
// store and eviction is an event: the second store repeats the blocks,
// the first copy's eviction removes a block the second copy still holds,
// the second request's next store names it as parent, and the second
// copy's eviction removes a block the index dropped. In enforce mode a
// rank whose ids are verified stays live through it, every violation
// counted; one that cannot be verified is quarantined, as before.
func TestVLLMDuplicateBlocksDoNotQuarantineAVerifiedRank(t *testing.T) {
	for _, tc := range []struct {
		name, engineHash string
		wantVerdict      Verdict
		wantState        State
	}{
		{"verified", "auto", VerdictVerified, StateLive},
		{"not verified (engine_hash off)", "off", VerdictUnverifiable, StateQuarantined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := newVerifyFixture(t, func(o *Options) { o.Mode = core.ModeEnforce; o.QuarantineSettle = time.Minute })
			f.addWorkerHash(1, "m", tc.engineHash)
			engine := vllmEngine(t, enginehash.VLLMSHA256CBOR, enginehash.DefaultVLLMSeed)
			w := src(1, "m", 0)
			prefix := tokens(100, 2*testBS)
			ids, last := engine.ids(t, nil, prefix)
			tail := tokens(900, testBS)
			tailIDs, _ := engine.ids(t, &last, tail)

			f.send(w, stored(nil, prefix, ids...)) // request a's copy
			require.Equal(t, tc.wantVerdict, f.rankInfo(1, 0).EngineHash.Verdict)
			f.send(w, stored(nil, prefix, ids...))       // request b's copy: duplicate_store
			f.send(w, removed(ids[1]))                   // a's copy of block 2 evicted
			f.send(w, stored(&ids[1], tail, tailIDs...)) // b's next block: parent_not_found
			f.send(w, removed(ids[1]))                   // b's copy evicted: block_not_found

			ri := f.rankInfo(1, 0)
			assert.Equal(t, tc.wantState, ri.State, ri.Reason)
			if tc.wantState == StateLive {
				assert.Zero(t, ri.Quarantines)
				assert.Equal(t, uint64(len(ids)), ri.Violations[core.ViolationDuplicateStore], "each block of the second copy")
				assert.Equal(t, uint64(1), ri.Violations[core.ViolationParentNotFound])
				assert.Equal(t, uint64(1), ri.Violations[core.ViolationBlockNotFound])
				assert.Equal(t, map[core.Worker]uint32{wk(1, 0): 1}, f.overlap("m", prefix, PromptOptions{}),
					"its first block still routes")
			}
		})
	}
}
