package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dumpBlocks counts what a dump writes: stored blocks and removed hashes.
func dumpBlocks(dump []RouterEvent) (blocks int) {
	for _, re := range dump {
		blocks += len(re.Event.Blocks) + len(re.Event.BlockHashes)
	}
	return blocks
}

// The shape (issue 10, item 3): worker X holds a chain of n
// blocks, worker Y the same chain plus k leaves, then Y removes its chain
// blocks. Each of Y's leaves used to be dumped with a path of temporary
// blocks through the whole chain (n x k blocks: 185 MB of JSON at 4,000
// nodes); a dump must grow with the tree.
func TestDumpIsLinearInTheTree(t *testing.T) {
	for _, shape := range []struct{ n, k int }{{10, 10}, {500, 500}, {2000, 2000}, {3000, 10}, {10, 3000}} {
		for _, spread := range []bool{false, true} {
			t.Run(fmt.Sprintf("chain %d, leaves %d, spread %v", shape.n, shape.k, spread), func(t *testing.T) {
				x, y := Worker{ID: 1}, Worker{ID: 2}
				idx := NewIndex(IndexOptions{Mode: ModeWarn})
				chain := make([]StoredBlock, shape.n)
				names := make([]uint64, shape.n)
				for i := range chain {
					names[i] = uint64(1_000_000 + i)
					chain[i] = StoredBlock{BlockHash: names[i], TokensHash: uint64(i)}
				}
				require.NoError(t, idx.ApplyStored(x, 1, nil, chain))
				require.NoError(t, idx.ApplyStored(y, 1, nil, chain))
				for j := range shape.k {
					parent := names[shape.n-1]
					if spread { // leaves hang off every chain block in turn
						parent = names[j%shape.n]
					}
					leaf := StoredBlock{BlockHash: uint64(5_000_000 + j), TokensHash: uint64(1_000_000 + j)}
					require.NoError(t, idx.ApplyStored(y, uint64(2+j), &parent, []StoredBlock{leaf}))
				}
				require.NoError(t, idx.ApplyRemoved(y, 99, names))

				s := idx.Stats()
				nodes := int(s.Nodes)
				require.Equal(t, shape.n+shape.k, nodes)
				dump := idx.Dump()
				// Pairs (n + k) plus at most one bridge per (worker, chain
				// block) and its removal: 2n more; a few events of slack.
				assert.LessOrEqual(t, dumpBlocks(dump), 3*nodes+8, "dump blocks for %d nodes", nodes)
				assert.LessOrEqual(t, len(dump), nodes+8, "dump events for %d nodes", nodes)

				replayed := replay(t, dump)
				require.NoError(t, checkInvariants(replayed))
				want := idx.Stats()
				want.Mode = 0 // not part of a dump
				requireSameStats(t, want, replayed.Stats())
				q := make([]uint64, shape.n+1)
				for i := range shape.n {
					q[i] = uint64(i)
				}
				for j := range min(shape.k, 50) {
					q[len(q)-1] = uint64(1_000_000 + j)
					assert.Equal(t, idx.AppendMatches(nil, q, false), replayed.AppendMatches(nil, q, false))
				}
			})
		}
	}
}
