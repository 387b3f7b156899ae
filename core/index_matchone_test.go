package core

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatchOneAgreesWithAppendMatches builds trees whose runs each have
// one holder (a worker's prompts branching off each other at random
// depths, some tails evicted) and checks that the single-holder walk
// AppendMatches takes gives what the general walk gives, with and
// without early exit, on queries that follow, leave and outrun them.
func TestMatchOneAgreesWithAppendMatches(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		x := NewIndex(IndexOptions{Mode: ModeWarn})
		w := Worker{ID: seed % 4}
		var prompts [][]StoredBlock
		for i := range 30 {
			p := chain(1+rng.IntN(40), seed<<32|uint64(i)<<16)
			if len(prompts) > 0 && rng.IntN(3) > 0 {
				// Branch off an earlier prompt: its first k blocks, then new ones.
				base := prompts[rng.IntN(len(prompts))]
				k := 1 + rng.IntN(len(base))
				p = append(append([]StoredBlock{}, base[:k]...), chainFrom(base[k-1].BlockHash, 1+rng.IntN(30), seed<<32|uint64(i)<<16|1<<15)...)
			}
			require.NoError(t, x.ApplyStored(w, uint64(i), nil, p))
			prompts = append(prompts, p)
			if rng.IntN(4) == 0 {
				// Evict a tail.
				tail := p[len(p)-1-rng.IntN(len(p)):]
				var hashes []uint64
				for j := len(tail) - 1; j >= 0; j-- {
					hashes = append(hashes, tail[j].BlockHash)
				}
				require.NoError(t, x.ApplyRemoved(w, uint64(i), hashes))
			}
		}
		for _, p := range prompts {
			q := localsOf(p)
			for _, query := range [][]uint64{q, q[:1+rng.IntN(len(q))], append(append([]uint64{}, q...), 7, 8, 9), append(append([]uint64{}, q[:len(q)/2+1]...), 42)} {
				first := x.t.childRun(rootRun, query[0])
				if first == noRun || len(x.t.runs.at(first).holders) != 1 {
					continue
				}
				for _, early := range []bool{false, true} {
					got := x.t.matchOne(nil, query, early, first, x.t.runs.at(first).holders[0].wi)
					var sc matchScratch
					want := x.t.appendMatches(nil, query, early, first, &sc)
					require.Equal(t, want, got, "seed %d early %v", seed, early)
				}
			}
		}
	}
}

// chainFrom continues a prompt after the block named parent with n new
// blocks.
func chainFrom(parent uint64, n int, salt uint64) []StoredBlock {
	out := make([]StoredBlock, n)
	seq := parent
	for i := range out {
		local := splitmix(uint64(i) + salt)
		seq = ChainStep(seq, local)
		out[i] = StoredBlock{BlockHash: seq, TokensHash: local}
	}
	return out
}
