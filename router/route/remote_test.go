package route

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

func TestObserverHearsLocalChangesOnly(t *testing.T) {
	f := newFixture(t, 2, Options{})
	var got []LoadEvent
	f.r.SetLoadObserver(func(ev LoadEvent) { got = append(got, ev) })
	d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1, 3*bs), RequestID: "q"})
	require.NoError(t, err)
	require.True(t, f.r.PrefillDone("q"))
	require.True(t, f.r.Free("q"))
	assert.False(t, f.r.Free("q"), "a second free changes nothing")
	require.True(t, f.r.AddRemote("other", "x", core.Worker{ID: 1}, 8, []uint64{1}))
	require.True(t, f.r.FreeRemote("other", "x"))

	require.Len(t, got, 3, "routed, prefill done, freed; nothing for remote requests or no-ops")
	assert.Equal(t, LoadEvent{Op: LoadRouted, RequestID: "q", Worker: core.Worker{ID: d.WorkerID, DPRank: d.DPRank},
		PrefillTokens: 3 * bs, Blocks: got[0].Blocks}, got[0])
	assert.Len(t, got[0].Blocks, 3)
	assert.Equal(t, LoadEvent{Op: LoadPrefillDone, RequestID: "q"}, got[1])
	assert.Equal(t, LoadEvent{Op: LoadFreed, RequestID: "q"}, got[2])

	f.r.SetLoadObserver(nil)
	_, err = f.r.Route(Request{Model: "m", TokenIDs: tokens(1, bs)})
	require.NoError(t, err)
	assert.Len(t, got, 3, "removed observer")
}

func TestRemoteRequestsCountAsLoad(t *testing.T) {
	cases := []struct {
		name   string
		end    func(r *Router) bool
		active int
	}{
		{"still active", func(*Router) bool { return true }, 1},
		{"freed by its owner", func(r *Router) bool { return r.FreeRemote("b", "x") }, 0},
		{"its owner vanished", func(r *Router) bool { return r.ExpireOwner("b") == 1 }, 0},
		{"prefill done keeps the blocks", func(r *Router) bool { return r.PrefillDoneRemote("b", "x") }, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 2, Options{})
			prompt := tokens(100, 8*bs)
			// Replica b routed a long prompt to worker 0.
			require.True(t, f.r.AddRemote("b", "x", core.Worker{ID: 0}, uint64(len(prompt)), []uint64{11, 12, 13, 14}))
			assert.False(t, f.r.AddRemote("b", "x", core.Worker{ID: 0}, 1, nil), "a repeated message adds nothing")
			assert.True(t, f.r.AddRemote("c", "x", core.Worker{ID: 1}, 1, nil), "ids are per owner")
			require.True(t, f.r.FreeRemote("c", "x"))
			require.True(t, c.end(f.r))
			assert.Equal(t, c.active, f.r.Stats().ActiveRequests)

			d, err := f.r.Route(Request{Model: "m", TokenIDs: tokens(1000, 2*bs)})
			require.NoError(t, err)
			if c.active == 1 {
				assert.Equal(t, uint64(1), d.WorkerID, "worker 0 carries replica b's request")
			}
			assert.False(t, f.r.Free("x"), "a local free never ends a remote request")
		})
	}
}

func TestExpiredRemoteRequestsAreForgotten(t *testing.T) {
	f := newFixture(t, 1, Options{RequestTTL: time.Second})
	for i := range 3000 {
		require.True(t, f.r.AddRemote("b", strconv.Itoa(i), core.Worker{ID: 0}, 1, []uint64{uint64(i)}))
		if i%1000 == 999 {
			f.clock.Advance(2 * time.Second)
			f.r.Expire() // their frees were lost: the TTL ends them
		}
	}
	f.r.mu.Lock()
	n := len(f.r.remote.owners["b"])
	f.r.mu.Unlock()
	assert.LessOrEqual(t, n, 2048, "expired requests' keys are pruned")
	assert.Equal(t, 0, f.r.ExpireOwner("b"), "all of them expired already")
}
