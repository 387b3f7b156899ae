package wasmhost

import (
	"sync"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentHashing hashes from many goroutines at once (run it with
// -race): every result must be the module's answer for its own input.
func TestConcurrentHashing(t *testing.T) {
	m := sharedModule(t)
	const goroutines, rounds = 16, 30
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens := make([]uint32, 64+g)
			for i := range tokens {
				tokens[i] = uint32(g*1000 + i)
			}
			opts := core.Options{LoraName: string(rune('a' + g%3))}
			want, err := m.BlockHashes(tokens, 4, opts)
			if !assert.NoError(t, err) {
				return
			}
			for range rounds {
				got, err := m.BlockHashes(tokens, 4, opts)
				if !assert.NoError(t, err) || !assert.Equal(t, want, got) {
					return
				}
				seq, err := m.SequenceHashes(publicBlocks)
				if !assert.NoError(t, err) || !assert.Equal(t, publicSeq, seq) {
					return
				}
				// Errors from one goroutine must not leak into another's
				// results (each instance has one last-error slot).
				_, err = m.BlockHashes(tokens, 0, opts)
				if !assert.ErrorIs(t, err, core.ErrInvalidArgument) {
					return
				}
			}
		}()
	}
	wg.Wait()
	m.pool.mu.Lock()
	live := m.pool.live
	m.pool.mu.Unlock()
	require.GreaterOrEqual(t, live, 1)
	require.LessOrEqual(t, live, m.pool.max)
}

// TestConcurrentHashingAndIndex shares one index between goroutines that
// update and query it while others hash on the pool (which may include the
// index's instance). Run with -race.
func TestConcurrentHashingAndIndex(t *testing.T) {
	m := sharedModule(t)
	x := newTestIndex(t, core.ModeWarn)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer is its own worker storing the public chain.
			w := core.Worker{ID: uint64(100 + g)}
			for i := range 20 {
				ev := storedEvent(uint64(i), nil, 0,
					block(uint64(1000*g+1), publicBlocks[0]), block(uint64(1000*g+2), publicBlocks[1]))
				if !assert.NoError(t, x.Apply(w.ID, ev)) {
					return
				}
				got, err := x.FindMatches(publicBlocks, false)
				if !assert.NoError(t, err) || !assert.Equal(t, uint32(2), got.Scores[w]) {
					return
				}
				if !assert.NoError(t, x.ClearWorker(w)) {
					return
				}
			}
		}()
	}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				got, err := m.BlockHashes(publicTokens, 4, core.Options{})
				if !assert.NoError(t, err) || !assert.Equal(t, publicBlocks, got) {
					return
				}
			}
		}()
	}
	wg.Wait()
	workers, err := x.Workers()
	require.NoError(t, err)
	assert.Len(t, workers, 4)
	stats, err := x.Stats()
	require.NoError(t, err)
	assert.Zero(t, stats.Nodes, "every writer cleared its blocks")
}
