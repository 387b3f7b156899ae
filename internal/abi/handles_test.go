package abi

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandleLifecycle(t *testing.T) {
	h1, err := IndexNew(1)
	require.NoError(t, err)
	h2, err := IndexNew(2)
	require.NoError(t, err)
	assert.NotZero(t, h1)
	assert.NotEqual(t, h1, h2)

	require.NoError(t, IndexFree(h1))
	assert.Equal(t, StatusUnknownHandle, StatusOf(IndexFree(h1)), "double free")
	assert.Equal(t, StatusUnknownHandle, StatusOf(IndexClearAllBlocks(h1, 1)), "use after free")
	require.NoError(t, IndexClearAllBlocks(h2, 1), "freeing one index leaves the others")

	h3, err := IndexNew(0)
	require.NoError(t, err)
	assert.NotEqual(t, h1, h3, "handles are never reused")
	require.NoError(t, IndexFree(h2))
	require.NoError(t, IndexFree(h3))
}

func TestUnknownHandles(t *testing.T) {
	freed, err := IndexNew(1)
	require.NoError(t, err)
	require.NoError(t, IndexFree(freed))

	buf := make([]byte, 64)
	ids, ranks, scores, sizes := make([]uint64, 4), make([]uint32, 4), make([]uint32, 4), make([]uint64, 4)
	calls := map[string]func(h uint64) error{
		"free":     IndexFree,
		"set_mode": func(h uint64) error { return IndexSetMode(h, 1) },
		"apply_json": func(h uint64) error {
			return IndexApplyJSON(h, 1, []byte(`{"event_id":1,"data":"cleared"}`))
		},
		"apply_router_event_json": func(h uint64) error {
			return IndexApplyRouterEventJSON(h, []byte(`{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`))
		},
		"apply_stored":     func(h uint64) error { return IndexApplyStored(h, 1, 0, 1, false, 0, []uint64{1}, []uint64{2}) },
		"apply_removed":    func(h uint64) error { return IndexApplyRemoved(h, 1, 0, 1, []uint64{1}) },
		"clear_worker":     func(h uint64) error { return IndexClearWorker(h, 1, 0) },
		"clear_all_blocks": func(h uint64) error { return IndexClearAllBlocks(h, 1) },
		"remove_worker":    func(h uint64) error { return IndexRemoveWorker(h, 1) },
		"find_matches": func(h uint64) error {
			_, err := IndexFindMatches(h, []uint64{1}, false, ids, ranks, scores, sizes)
			return err
		},
		"dump_jsonl": func(h uint64) error { _, err := IndexDumpJSONL(h, buf); return err },
		"stats_json": func(h uint64) error { _, err := IndexStatsJSON(h, buf); return err },
		"workers":    func(h uint64) error { _, err := IndexWorkers(h, ids, ranks); return err },
	}
	assert.Equal(t, "unknown index handle: handle 0 names no index (it is what a binding holds after freeing one)",
		Message(IndexFree(0)))
	for name, call := range calls {
		for _, h := range []uint64{0, freed, 1 << 63} {
			err := call(h)
			assert.Equal(t, StatusUnknownHandle, StatusOf(err), "%s(%d): %v", name, h, err)
		}
	}
}

func TestIndexModes(t *testing.T) {
	for _, m := range []int32{-1, 3, 255, 256, 1 << 30} {
		_, err := IndexNew(m)
		assert.Equal(t, StatusInvalidArgument, StatusOf(err), "mode %d", m)
	}
	h, err := IndexNew(1)
	require.NoError(t, err)
	defer IndexFree(h)
	assert.Equal(t, StatusInvalidArgument, StatusOf(IndexSetMode(h, 7)))
	for _, m := range []int32{0, 1, 2} {
		assert.NoError(t, IndexSetMode(h, m))
	}
}

// Many threads create, use and free indexes while others look handles up:
// run with -race.
func TestHandleTableConcurrent(t *testing.T) {
	shared, err := IndexNew(1)
	require.NoError(t, err)
	defer IndexFree(shared)

	const goroutines, rounds = 8, 200
	var wg sync.WaitGroup
	seen := make([][]uint64, goroutines)
	errs := make(chan error, goroutines*rounds)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				h, err := IndexNew(1)
				if err != nil {
					errs <- err
					return
				}
				seen[g] = append(seen[g], h)
				if err := IndexApplyStored(h, uint64(g), 0, uint64(i), false, 0, []uint64{1}, []uint64{2}); err != nil {
					errs <- err
				}
				if err := IndexApplyStored(shared, uint64(g), 0, uint64(i), false, 0, []uint64{uint64(i + 1)}, []uint64{uint64(i)}); err != nil {
					errs <- err
				}
				if err := IndexFree(h); err != nil {
					errs <- err
				}
				if StatusOf(IndexFree(h)) != StatusUnknownHandle {
					errs <- assert.AnError
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	unique := map[uint64]bool{}
	for _, hs := range seen {
		for _, h := range hs {
			assert.False(t, unique[h], "handle %d given twice", h)
			unique[h] = true
		}
	}
	assert.Len(t, unique, goroutines*rounds)

	ids, ranks := make([]uint64, goroutines), make([]uint32, goroutines)
	n, err := IndexWorkers(shared, ids, ranks)
	require.NoError(t, err)
	assert.Equal(t, goroutines, n)
}
