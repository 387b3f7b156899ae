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

// naiveActive is the definition the holders rows and tails stand for:
// the blocks the rank's active requests hold, from their block lists.
func naiveActive(t *loadTable, w core.Worker) map[uint64]bool {
	held := map[uint64]bool{}
	s, ok := t.slotOf[w]
	if !ok {
		return held
	}
	for _, rq := range t.requests {
		if rq.slot == s {
			for _, h := range rq.blocks {
				held[h] = true
			}
		}
	}
	return held
}

// naiveDepth is the number of leading hashes of seq in held.
func naiveDepth(held map[uint64]bool, seq []uint64) uint32 {
	d := 0
	for d < len(seq) && held[seq[d]] {
		d++
	}
	return uint32(d)
}

// TestLoadTableDepthsMatchBlockMaps drives the load table through random
// adds (as a route makes them, and as a replica's are), frees and
// expiries over more ranks than one bit word holds (so rows widen) and
// enough churn to sweep idle slots, of prompts that share prefixes, end
// in tails of their own, and continue other requests' (promotions), and
// checks after each step that every candidate's slot, depth and projected
// load agree with the blocks of the requests active on its rank.
func TestLoadTableDepthsMatchBlockMaps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		steps   int
	}{{"one word", 40, 3000}, {"wide rows and sweeps", 700, 6000}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.workers)))
			lt := newLoadTable()
			// Prompts share prefixes (chains over a small alphabet), most
			// end in blocks of their own, and some continue an active
			// request's prompt (a conversation's next turn).
			locals := map[string][]uint64{}
			var ids []string
			prompt := func() []uint64 {
				var local []uint64
				if len(ids) > 0 && rng.IntN(3) == 0 {
					prev := locals[ids[rng.IntN(len(ids))]]
					local = append(local, prev[:rng.IntN(len(prev)+1)]...)
				} else {
					for range rng.IntN(8) {
						local = append(local, uint64(rng.IntN(3)))
					}
				}
				for range rng.IntN(10) {
					local = append(local, 3+rng.Uint64N(1<<40))
				}
				if len(local) == 0 {
					local = append(local, uint64(rng.IntN(3)))
				}
				return local
			}
			cache := &slotCache{}
			var depth []uint32
			now := time.Unix(0, 0)
			swept := false
			for step := range tc.steps {
				now = now.Add(time.Millisecond)
				switch op := rng.IntN(10); {
				case op < 6:
					id := strconv.Itoa(step)
					w := core.Worker{ID: uint64(rng.IntN(tc.workers)), DPRank: uint32(rng.IntN(2))}
					local := prompt()
					seq := core.SequenceHashes(local)
					if op < 3 {
						lt.add(id, w, uint64(rng.IntN(100)), seq, now, false) // a replica's
					} else { // a route's: depths, then the add in the same hold of the lock
						depth = lt.depths(seq, depth)
						lt.addInto(new(request), id, w, uint64(rng.IntN(100)), seq, now, false)
					}
					locals[id] = local
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
				seq := core.SequenceHashes(prompt())
				slots := lt.slotsFor(cache, cands)
				depth = lt.depths(seq, depth)
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
					held := naiveActive(&lt, c.Worker)
					require.Equal(t, naiveDepth(held, seq), d, "depth of %v", c.Worker)
					want := Load{DecodeBlocks: uint64(len(seq))}
					if s >= 0 {
						want = Load{PrefillTokens: lt.ranks[s].prefillTokens, DecodeBlocks: uint64(len(held)+len(seq)) - uint64(d)}
					}
					require.Equal(t, want, lt.projected(slots[i], d, len(seq)))
				}
			}
			// Everything freed: no holder row is left, and stats list no rank.
			for _, id := range ids {
				active := lt.has(id)
				require.Equal(t, active, lt.free(id))
			}
			require.Empty(t, lt.chains.root.kids, "no node is left")
			require.Empty(t, lt.workers())
			if tc.workers > 64 {
				require.True(t, swept, "idle slots were swept")
			}
		})
	}
}

// addAs adds a request of one prefill token to lt as a route does
// (depths, then the add, in one hold of the lock) or as a replica's
// message does (the add alone); it returns depth's buffer.
func addAs(lt *loadTable, route bool, id string, w core.Worker, seq []uint64, now time.Time, depth []uint32) []uint32 {
	if route {
		depth = lt.depths(seq, depth)
		lt.addInto(new(request), id, w, 1, seq, now, false)
	} else {
		lt.add(id, w, 1, seq, now, false)
	}
	return depth
}

// FuzzLoadTable runs the load table through the adds (a route's and a
// replica's), frees and expiries the input spells, of prompts that share
// prefixes, continue each other and end in tails of their own, and
// checks after each step that every rank's depth and projected load for
// a probe prompt agree with its active requests' own blocks.
func FuzzLoadTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{3, 0, 3, 0, 3, 0, 7, 1, 200, 5, 5, 5, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		lt := newLoadTable()
		var locals [][]uint64
		var ids []string
		var depth []uint32
		now := time.Unix(0, 0)
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		// A prompt: part of an earlier one (a continuation) or a few
		// blocks over a small alphabet, then blocks of its own.
		prompt := func() []uint64 {
			b := next()
			var local []uint64
			if len(locals) > 0 && b&1 == 1 {
				prev := locals[int(b>>1)%len(locals)]
				local = append(local, prev[:int(next())%(len(prev)+1)]...)
			} else {
				for i := range int(b>>1) % 6 {
					local = append(local, uint64((int(b)+i)%3))
				}
			}
			for i := range int(next()) % 8 {
				local = append(local, 3+uint64(len(locals))<<8+uint64(i))
			}
			if len(local) == 0 {
				local = append(local, 0)
			}
			return local
		}
		for step := 0; len(data) > 0 && step < 200; step++ {
			now = now.Add(time.Millisecond)
			op := next()
			switch {
			case op < 160:
				id := strconv.Itoa(step)
				w := core.Worker{ID: uint64(op % 5)}
				local := prompt()
				seq := core.SequenceHashes(local)
				depth = addAs(&lt, op%2 == 1, id, w, seq, now, depth)
				locals = append(locals, local)
				ids = append(ids, id)
			case op < 240 && len(ids) > 0:
				lt.free(ids[int(next())%len(ids)])
			default:
				lt.expire(now.Add(-time.Duration(next()) * time.Millisecond))
			}
			seq := core.SequenceHashes(prompt())
			depth = lt.depths(seq, depth)
			for id := range uint64(5) {
				w := core.Worker{ID: id}
				s, ok := lt.slotOf[w]
				if !ok {
					continue
				}
				held := naiveActive(&lt, w)
				require.Equal(t, naiveDepth(held, seq), depth[s], "depth of worker %d", id)
				require.Equal(t, uint64(len(held)+len(seq))-uint64(depth[s]), lt.projected(s, depth[s], len(seq)).DecodeBlocks)
			}
		}
		for _, id := range ids {
			lt.free(id)
		}
		require.Empty(t, lt.chains.root.kids)
	})
}

// FuzzLoadTableAnyLists adds lists that are not chains (repeats, any
// order), as only a replica's bad message could: the table may then
// count a block twice, but it never panics, never counts below zero, and
// is empty again once every request has ended.
func FuzzLoadTableAnyLists(f *testing.F) {
	f.Add([]byte{5, 5, 1, 2, 0, 3, 3, 200, 7, 7, 250, 1})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Fuzz(func(t *testing.T, data []byte) {
		lt := newLoadTable()
		var ids []string
		var depth []uint32
		now := time.Unix(0, 0)
		for step := 0; len(data) > 1 && step < 200; step++ {
			now = now.Add(time.Millisecond)
			op, n := data[0], int(data[1])%8
			data = data[2:]
			switch {
			case op < 180:
				list := make([]uint64, 0, n)
				for i := 0; i < n && i < len(data); i++ {
					list = append(list, uint64(data[i]%6)) // few values: repeats
				}
				data = data[min(n, len(data)):]
				id := strconv.Itoa(step)
				w := core.Worker{ID: uint64(op % 3)}
				depth = addAs(&lt, op%2 == 1, id, w, list, now, depth)
				ids = append(ids, id)
			case op < 240 && len(ids) > 0:
				lt.free(ids[n%len(ids)])
			default:
				lt.expire(now.Add(-time.Duration(n) * time.Millisecond))
			}
			for s := range lt.ranks {
				require.GreaterOrEqual(t, lt.chains.heldBlocks(int32(s)), 0)
			}
		}
		for _, id := range ids {
			lt.free(id)
		}
		require.Empty(t, lt.chains.root.kids)
		require.Empty(t, lt.workers())
	})
}
