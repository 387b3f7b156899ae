package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Engines evict a prompt's blocks from the last one back, which removed
// applies a whole run at a time (tailEater); these streams evict in that
// order and in others, with the run shared, split, aliased, unnamed in
// part, extended and re-stored between removals, and check every step
// against the model.
func TestEvictionOrdersAgreeWithModel(t *testing.T) {
	type step func(g *evictGen)
	cases := []struct {
		name  string
		steps []step
	}{
		{"tail first", []step{storeChain(0, 0, 40), evict(0, 0, 40, tailFirst)}},
		{"tail first in parts", []step{storeChain(0, 0, 40), evict(0, 0, 10, tailFirst), evict(0, 0, 40, tailFirst)}},
		{"head first", []step{storeChain(0, 0, 40), evict(0, 0, 40, headFirst)}},
		{"shuffled", []step{storeChain(0, 0, 40), evict(0, 0, 40, shuffled)}},
		{"shared with another worker", []step{storeChain(0, 0, 40), storeChain(1, 0, 25), evict(0, 0, 40, tailFirst), evict(1, 0, 25, tailFirst)}},
		{"other worker holds longer", []step{storeChain(1, 0, 40), storeChain(0, 0, 25), evict(0, 0, 25, tailFirst)}},
		{"run split below the eaten part", []step{storeChain(0, 0, 40), storeBranch(0, 0, 20, 7), evict(0, 0, 40, tailFirst)}},
		{"children below the last block", []step{storeChain(0, 0, 40), storeBranch(0, 0, 40, 3), storeBranch(1, 0, 40, 5), evict(0, 0, 40, tailFirst)}},
		{"aliased names", []step{storeChain(0, 0, 40), storeChainNamed(1, 0, 40, 77), evict(1, 0, 40, tailFirst), evict(0, 0, 40, tailFirst)}},
		{"a name reused (ghost)", []step{storeChain(0, 0, 30), reuseName(0, 0, 12), evict(0, 0, 30, tailFirst)}},
		{"extended between removals", []step{storeChain(0, 0, 20), evict(0, 0, 5, tailFirst), storeChain(0, 0, 30), evict(0, 0, 30, tailFirst)}},
		{"unknown names among them", []step{storeChain(0, 0, 30), evictWithUnknown(0, 0, 30)}},
		{"two chains in one event", []step{storeChain(0, 0, 20), storeChain(0, 1, 20), evictTwo(0, 20)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &evictGen{t: t, x: NewIndex(IndexOptions{Mode: ModeWarn}), m: newModel(), rng: rand.New(rand.NewPCG(1, 2))}
			for i, s := range tc.steps {
				s(g)
				for p := range 2 {
					for n := 1; n <= 45; n += 4 {
						requireSameMatches(t, g.x, g.m, g.locals(p, n), false, fmt.Sprintf("after step %d", i))
					}
				}
				requireSameStats(t, g.m.stats(), g.x.Stats())
				require.NoError(t, checkInvariants(g.x))
			}
		})
	}
}

type evictGen struct {
	t   *testing.T
	x   *Index
	m   *model
	rng *rand.Rand
	id  uint64
}

// local and name give prompt p's block i its local hash and worker w's
// name for it (names differ per naming seed).
func (g *evictGen) local(p, i int) uint64 { return uint64(p)<<32 | uint64(i) + 1 }
func name(seed uint64, p, i int) uint64   { return seed<<48 | uint64(p)<<32 | uint64(i) + 100 }

func (g *evictGen) locals(p, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = g.local(p, i)
	}
	return out
}

func (g *evictGen) apply(w uint64, ev Event) {
	g.id++
	ev.ID = g.id
	applyBoth(g.t, g.x, g.m, genOp{kind: opEvent, workerID: w, ev: ev})
}

func storeChainNamed(w uint64, p, n int, seed uint64) func(*evictGen) {
	return func(g *evictGen) {
		blocks := make([]StoredBlock, n)
		for i := range blocks {
			blocks[i] = StoredBlock{BlockHash: name(seed, p, i), TokensHash: g.local(p, i)}
		}
		g.apply(w, Event{Kind: EventStored, Blocks: blocks})
	}
}

func storeChain(w uint64, p, n int) func(*evictGen) { return storeChainNamed(w, p, n, 0) }

// storeBranch stores k blocks of another content under block at-1 of
// prompt p.
func storeBranch(w uint64, p, at, k int) func(*evictGen) {
	return func(g *evictGen) {
		parent := name(0, p, at-1)
		blocks := make([]StoredBlock, k)
		for i := range blocks {
			blocks[i] = StoredBlock{BlockHash: name(9, p, at+i), TokensHash: g.local(p+50, at+i)}
		}
		g.apply(w, Event{Kind: EventStored, ParentHash: &parent, Blocks: blocks})
	}
}

// reuseName stores a block of other content at the root under the name of
// block i of prompt p, leaving that block unnamed.
func reuseName(w uint64, p, i int) func(*evictGen) {
	return func(g *evictGen) {
		g.apply(w, Event{Kind: EventStored, Blocks: []StoredBlock{{BlockHash: name(0, p, i), TokensHash: 999}}})
	}
}

type order int

const (
	tailFirst order = iota
	headFirst
	shuffled
)

func evict(w uint64, p, n int, o order) func(*evictGen) {
	return func(g *evictGen) {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = name(0, p, n-1-i)
		}
		switch o {
		case headFirst:
			slices.Reverse(hashes)
		case shuffled:
			g.rng.Shuffle(len(hashes), func(i, j int) { hashes[i], hashes[j] = hashes[j], hashes[i] })
		}
		if w == 1 && g.x.Stats().Violations[ViolationHashMismatch] > 0 {
			for i := range hashes { // worker 1 named them with seed 77 in "aliased names"
				hashes[i] = name(77, p, n-1-i)
			}
		}
		g.apply(w, Event{Kind: EventRemoved, BlockHashes: hashes})
	}
}

func evictWithUnknown(w uint64, p, n int) func(*evictGen) {
	return func(g *evictGen) {
		var hashes []uint64
		for i := n - 1; i >= 0; i-- {
			hashes = append(hashes, name(0, p, i))
			if i%7 == 0 {
				hashes = append(hashes, 123456789+uint64(i))
			}
		}
		g.apply(w, Event{Kind: EventRemoved, BlockHashes: hashes})
	}
}

// evictTwo evicts the tails of prompts 0 and 1 interleaved, a block of
// each in turn.
func evictTwo(w uint64, n int) func(*evictGen) {
	return func(g *evictGen) {
		var hashes []uint64
		for i := n - 1; i >= 0; i-- {
			hashes = append(hashes, name(0, 0, i), name(0, 1, i))
		}
		g.apply(w, Event{Kind: EventRemoved, BlockHashes: hashes})
	}
}
