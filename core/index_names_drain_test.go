package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A large table grows without moving its names at once: after a growth
// the old halves stay beside the new ones, each mutation moves at most
// one drain step's names, the old table is empty before the next growth
// (none forced), and every name is found throughout, wherever it is.
func TestNameTableGrowthIsIncremental(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deleteOne int // one delete to this many inserts (0: none)
	}{
		{"only inserts", 0},
		{"one delete to three inserts", 3},
		{"churn", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(tc.deleteOne)))
			ns := newNameSpace()
			var m nameTable
			var names []uint64
			growths, drained := 0, 0
			maxMoved := 0
			for i := range 400_000 {
				if tc.deleteOne == 1 && len(names) >= 60_000 && i%2 == 1 || tc.deleteOne > 1 && i%tc.deleteOne == 0 && len(names) > 0 {
					j := rng.IntN(len(names))
					ks := ns.keys()
					_, ok := m.take(names[j], &ks, noRef, 0)
					require.True(t, ok)
					names[j] = names[len(names)-1]
					names = names[:len(names)-1]
					continue
				}
				k := rng.Uint64()
				v := ns.block(k, k)
				ks := ns.keys()
				halves, hadOld := len(m.halves), m.old != nil
				inOld := 0
				if hadOld {
					inOld = m.old.count
				}
				require.True(t, m.add(k, v, &ks))
				names = append(names, k)
				if len(m.halves) != halves {
					growths++
					// More left in old than one step moves: this growth
					// had to finish the previous one's drain at once.
					require.False(t, hadOld && inOld > nameDrainChunk*groupSlots, "a growth had to finish the previous one's drain")
					if halves >= nameDrainMin {
						require.NotNil(t, m.old, "a table of %d halves grown at once", halves)
						require.Equal(t, halves, len(m.old.halves))
						require.Equal(t, m.old.count+m.count, m.len())
						require.LessOrEqual(t, m.count, 1, "the growth moved names at once")
						require.NoError(t, checkNameTable(&m, &ks))
					}
				} else if hadOld {
					moved := inOld
					if m.old != nil {
						moved -= m.old.count
					} else {
						drained++
						require.NoError(t, checkNameTable(&m, &ks))
					}
					maxMoved = max(maxMoved, moved)
				}
				if m.old != nil && i%997 == 0 {
					require.NoError(t, checkNameTable(&m, &ks))
				}
			}
			require.Greater(t, growths, 3)
			require.Positive(t, drained, "no growth was drained")
			require.LessOrEqual(t, maxMoved, nameDrainChunk*groupSlots, "names moved by one insert")
			require.Positive(t, maxMoved)
			ks := ns.keys()
			require.Equal(t, len(names), m.len())
			for _, k := range names {
				_, ok := m.get(k, &ks)
				require.True(t, ok)
			}
		})
	}
}

// A large table close to growing has its next halves made off the lock,
// and the growth takes them: the insert that grows it does not allocate
// (or fault in) the new table itself.
func TestNameTableNextHalvesAreMadeAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	ns := newNameSpace()
	var m nameTable
	var prepared *nameHalf
	for i := 0; ; i++ {
		require.Less(t, i, 1_000_000, "the table never grew past %d halves", 2*namePrepareMin)
		k := rng.Uint64()
		v := ns.block(k, k)
		ks := ns.keys()
		halves := len(m.halves)
		m.reserve(1, &ks)
		if m.next != nil && prepared == nil {
			// Wait for the halves, and note which they are.
			var hs []nameHalf
			select {
			case hs = <-m.next:
			case <-time.After(10 * time.Second):
				t.Fatal("the next halves were never made")
			}
			require.Len(t, hs, 4*len(m.halves), "a table under nameQuadrupleMax halves quadruples")
			prepared = &hs[0]
			m.next <- hs
		}
		require.True(t, m.add(k, v, &ks))
		if len(m.halves) != halves && halves >= namePrepareMin {
			require.NotNil(t, prepared, "the table grew from %d halves without its next halves asked for", halves)
			require.Same(t, prepared, &m.halves[0], "the growth made its own halves")
			require.Nil(t, m.next)
			require.NoError(t, checkNameTable(&m, &ks))
			return
		}
	}
}
