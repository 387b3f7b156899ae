package policy

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/internal/benchalt"
)

// blockMap is the plain form of the emulation's memory, the oracle: each
// block hash maps to the last worker sent a prompt holding it.
type blockMap map[uint64]core.Worker

func (m blockMap) longestMatch(blocks []uint64) (int, core.Worker) {
	var w core.Worker
	for n, h := range blocks {
		last, ok := m[h]
		if !ok {
			return n, w
		}
		w = last
	}
	return len(blocks), w
}

func (m blockMap) insert(blocks []uint64, w core.Worker) {
	for _, h := range blocks {
		m[h] = w
	}
}

// chain returns the sequence hashes of a prompt's block contents (as
// local hashes), as the router's are: each names its whole prefix.
func chain(contents []uint64) []uint64 { return core.SequenceHashes(contents) }

// sharedPrompts draws prompts that share prefixes of varied lengths with
// one another (a few system prompts, conversations growing turn by turn)
// and end anywhere, inside a run or past it.
func sharedPrompts(rng *rand.Rand, n int) [][]uint64 {
	var contents [][]uint64
	for range n {
		var c []uint64
		if len(contents) > 0 && rng.IntN(4) > 0 {
			base := contents[rng.IntN(len(contents))]
			c = append(c, base[:rng.IntN(len(base)+1)]...)
		}
		for range rng.IntN(12) {
			c = append(c, uint64(rng.IntN(6)))
		}
		contents = append(contents, c)
	}
	out := make([][]uint64, n)
	for i, c := range contents {
		out[i] = chain(c)
	}
	return out
}

// The tree answers every match as the per-block map does, whatever the
// order of prompts and workers.
func TestSGLangTreeMatchesTheBlockMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tree sglangTree
		oracle := blockMap{}
		for i, p := range sharedPrompts(rng, 200) {
			wantN, wantW := oracle.longestMatch(p)
			gotN, gotW := tree.longestMatch(p)
			require.Equal(t, wantN, gotN, "seed %d prompt %d: matched blocks", seed, i)
			require.Equal(t, wantW, gotW, "seed %d prompt %d: the match's worker", seed, i)
			w := core.Worker{ID: uint64(1 + rng.IntN(4)), DPRank: uint32(rng.IntN(2))}
			tree.insert(p, w)
			oracle.insert(p, w)
		}
	}
}

// Any lists, chains or not: no panic, and every list inserted matches in
// full afterwards under the worker it was inserted with.
func FuzzSGLangTree(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 1, 2, 9, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var tree sglangTree
		var lists [][]uint64
		var cur []uint64
		for _, b := range data {
			if b == 0 {
				lists, cur = append(lists, cur), nil
				continue
			}
			cur = append(cur, uint64(b%8))
		}
		lists = append(lists, cur)
		for i, l := range lists {
			tree.longestMatch(l)
			w := core.Worker{ID: uint64(i + 1)}
			tree.insert(l, w)
			n, got := tree.longestMatch(l)
			require.Equal(t, len(l), n, "list %d matches in full after its insert", i)
			if len(l) > 0 {
				require.Equal(t, w, got, "list %d: its worker", i)
			}
		}
	})
}

// A 191k-token prompt's match and insert (12k blocks of 16 tokens, the
// demo trace's longest), following a conversation's previous turn, in the
// tree against the per-block map (new/old).
func BenchmarkSGLangLongPrompt(b *testing.B) {
	const blocks = 12_000
	rng := rand.New(rand.NewPCG(1, 2))
	contents := make([]uint64, blocks)
	for i := range contents {
		contents[i] = rng.Uint64()
	}
	// A table as large as a demo run's: other prompts' blocks.
	tree, oracle := &sglangTree{}, blockMap{}
	for range 40 {
		other := make([]uint64, 2_000)
		for i := range other {
			other[i] = rng.Uint64()
		}
		p := chain(other)
		tree.insert(p, core.Worker{ID: 9})
		oracle.insert(p, core.Worker{ID: 9})
	}
	prompt := chain(contents)
	turn := 0
	pick := func(m interface {
		longestMatch([]uint64) (int, core.Worker)
		insert([]uint64, core.Worker)
	}) func() {
		return func() {
			// Each turn the conversation's prompt is the last one's plus
			// a little: the match covers most of it.
			turn++
			n := blocks - 64 + turn%64
			m.longestMatch(prompt[:n])
			m.insert(prompt[:n], core.Worker{ID: uint64(1 + turn%4)})
		}
	}
	benchalt.Run(b, pick(tree), pick(oracle))
}
