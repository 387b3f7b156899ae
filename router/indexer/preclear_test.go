package indexer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// The registry changes that drop a rank's blocks drop them before they
// take the registry's lock, which routes take: while a rank's blocks are
// being dropped (here: while its mutex is held, as a rank busy with an
// event holds it), routes are answered. Once the change is done the
// blocks are gone and the other worker's are not.
func TestRegistryChangesDropBlocksOutsideTheRegistryLock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f *fixture) bool
	}{
		{"RemoveWorker", func(f *fixture) bool { return f.ix.RemoveWorker(1) }},
		{"RemoveRank", func(f *fixture) bool { return f.ix.RemoveRank(1, 1) }},
		{"AddWorker to another model", func(f *fixture) bool {
			_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "other", DPSize: 2, EngineHash: "off"})
			return err == nil
		}},
		{"AddWorker to a smaller dp_size", func(f *fixture) bool {
			_, err := f.ix.AddWorker(WorkerSpec{WorkerID: 1, Model: "m", DPSize: 1, EngineHash: "off"})
			return err == nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.addWorker(1, "m", 2)
			f.addWorker(2, "m", 1)
			toks := tokens(100, 8*testBS)
			hashes := make([]uint64, 8)
			for i := range hashes {
				hashes[i] = uint64(1000 + i)
			}
			f.send(src(1, "m", 1), stored(nil, toks, hashes...))
			f.send(src(2, "m", 0), stored(nil, toks, hashes...))
			require.Equal(t, map[core.Worker]uint32{{ID: 1, DPRank: 1}: 8, {ID: 2}: 8}, f.overlap("m", toks, PromptOptions{}))

			busy := f.ix.workers[1].ranks[1]
			busy.mu.Lock()
			changed := make(chan bool, 1)
			go func() { changed <- tc.change(f) }()
			routed := make(chan map[core.Worker]uint32, 1)
			go func() {
				time.Sleep(20 * time.Millisecond) // the change is waiting for the rank
				routed <- f.overlap("m", toks, PromptOptions{})
			}()
			select {
			case got := <-routed:
				assert.Equal(t, uint32(8), got[core.Worker{ID: 2}], "routes are answered meanwhile")
			case <-time.After(10 * time.Second):
				t.Fatal("a route waited for the registry change")
			}
			busy.mu.Unlock()
			require.True(t, <-changed)
			assert.Equal(t, map[core.Worker]uint32{{ID: 2}: 8}, f.overlap("m", toks, PromptOptions{}))
		})
	}
}
