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
