package route

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// naiveDepth is the definition the holders walk replaces: the number of
// leading hashes of seq the rank has active, asked of its own block map.
func naiveDepth(t *loadTable, w core.Worker, seq []uint64) uint32 {
	s, ok := t.slotOf[w]
	if !ok {
		return 0
	}
	d := 0
	for d < len(seq) && t.ranks[s].blocks[seq[d]] > 0 {
		d++
	}
	return uint32(d)
}

// TestLoadTableDepthsMatchBlockMaps drives the load table through random
// adds, frees and expiries over more ranks than one bit word holds (so
// rows widen) and enough churn to sweep idle slots, and checks after each
// step that every candidate's slot, depth and projected load agree with
// the ranks' own block maps.
func TestLoadTableDepthsMatchBlockMaps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		steps   int
	}{{"one word", 40, 3000}, {"wide rows and sweeps", 700, 6000}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.workers)))
			lt := newLoadTable()
			// Prompts share prefixes: chains over a small alphabet.
			prompt := func() []uint64 {
				n := 1 + rng.IntN(12)
				local := make([]uint64, n)
				for i := range local {
					local[i] = uint64(rng.IntN(3))
				}
				return core.SequenceHashes(local)
			}
			var ids []string
			cache := &slotCache{}
			var depth []uint32
			var alive []uint64
			now := time.Unix(0, 0)
			swept := false
			for step := range tc.steps {
				now = now.Add(time.Millisecond)
				switch op := rng.IntN(10); {
				case op < 6:
					id := strconv.Itoa(step)
					w := core.Worker{ID: uint64(rng.IntN(tc.workers)), DPRank: uint32(rng.IntN(2))}
					lt.add(id, w, uint64(rng.IntN(100)), prompt(), now, false)
					ids = append(ids, id)
				case op < 9 && len(ids) > 0:
					i := rng.IntN(len(ids))
					active := lt.has(ids[i]) // or expired already
					require.Equal(t, active, lt.free(ids[i]))
					ids[i] = ids[len(ids)-1]
					ids = ids[:len(ids)-1]
				default:
					lt.expire(now.Add(-200 * time.Millisecond))
				}
				swept = swept || len(lt.freeSlots) > 0
				cands := make([]indexer.Candidate, 0, 16)
				for range 16 {
					cands = append(cands, indexer.Candidate{Worker: core.Worker{ID: uint64(rng.IntN(tc.workers)), DPRank: uint32(rng.IntN(2))}})
				}
				seq := prompt()
				slots := lt.slotsFor(cache, cands)
				depth, alive = lt.depths(seq, depth, alive)
				for i, c := range cands {
					s, ok := lt.slotOf[c.Worker]
					if !ok {
						s = -1
					}
					require.Equal(t, s, slots[i], "slot of %v", c.Worker)
					var d uint32
					if s >= 0 {
						d = depth[s]
					}
					require.Equal(t, naiveDepth(&lt, c.Worker, seq), d, "depth of %v", c.Worker)
					want := Load{DecodeBlocks: uint64(len(seq))}
					if s >= 0 {
						rl := lt.ranks[s]
						want = Load{PrefillTokens: rl.prefillTokens, DecodeBlocks: uint64(len(rl.blocks)+len(seq)) - uint64(d)}
					}
					require.Equal(t, want, lt.projected(slots[i], d, len(seq)))
				}
			}
			// Everything freed: no holder row is left, and stats list no rank.
			for _, id := range ids {
				active := lt.has(id)
				require.Equal(t, active, lt.free(id))
			}
			require.Empty(t, lt.holders.rows)
			require.Empty(t, lt.workers())
			if tc.workers > 64 {
				require.Greater(t, lt.holders.stride, 1, "rows widened past 64 slots")
				require.True(t, swept, "idle slots were swept")
			}
		})
	}
}
