package indexer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// A quarantined rank whose engine goes quiet after a clean stretch is
// taken back by Settle once its time is up, without another batch; one
// whose time is not up stays quarantined.
func TestSettleTakesBackAQuietRankWhoseTimeIsUp(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Mode = core.ModeEnforce
		o.Replay = &replayLog{}
		o.QuarantineSettle = 30 * time.Second
	})
	f.addWorker(1, "m", 1)
	f.addWorker(2, "m", 2)
	prompt := tokens(1, 8)
	good, bad := src(1, "m", 0), src(2, "m", 1)
	f.send(good, stored(nil, prompt, 11, 12))
	f.send(bad, stored(nil, prompt[:4], 21)) // hash_mismatch: quarantined
	require.Equal(t, StateQuarantined, f.rankInfo(2, 1).State)
	f.send(bad, stored(nil, tokens(900, 4), 22)) // a clean store, then silence

	f.clock.Advance(29 * time.Second)
	f.ix.Settle()
	assert.Equal(t, StateQuarantined, f.rankInfo(2, 1).State, "29 s clean is not enough")

	f.clock.Advance(2 * time.Second)
	f.ix.Settle()
	ri := f.rankInfo(2, 1)
	assert.Equal(t, StateLive, ri.State)
	assert.Empty(t, ri.Reason)
	assert.Equal(t, StateLive, f.rankInfo(1, 0).State)
}
