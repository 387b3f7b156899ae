package abi

import (
	"errors"
	"sync"

	"github.com/kvhash/kvhash/core"
)

// isDecode and isRejected classify core's index errors for StatusOf. Every
// stability violation that comes back as an error counts as a rejection:
// core returns one only when (part of) the event was not applied, or in
// enforce mode.
func isDecode(err error) bool { return errors.Is(err, core.ErrDecode) }
func isRejected(err error) bool {
	return errors.Is(err, core.ErrEventRejected) || errors.Is(err, core.ErrStability)
}

// mode converts the ABI's int32 mode.
func mode(m int32) (core.Mode, error) {
	if m < 0 || m > 255 || !core.Mode(m).Valid() {
		return 0, invalidf("mode %d is not 0 (from environment), 1 (warn) or 2 (enforce)", m)
	}
	return core.Mode(m), nil
}

// IndexNew is kvhash_index_new.
func IndexNew(m int32) (uint64, error) {
	cm, err := mode(m)
	if err != nil {
		return 0, err
	}
	return indexes.add(core.NewIndex(core.IndexOptions{Mode: cm})), nil
}

// IndexFree is kvhash_index_free.
func IndexFree(h uint64) error { return indexes.remove(h) }

// IndexSetMode is kvhash_index_set_mode.
func IndexSetMode(h uint64, m int32) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	cm, err := mode(m)
	if err != nil {
		return err
	}
	x.SetMode(cm)
	return nil
}

// IndexApplyJSON is kvhash_index_apply_json. The event is decoded before
// the index is touched: a malformed event changes nothing.
func IndexApplyJSON(h, workerID uint64, data []byte) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	return x.ApplyJSON(workerID, data)
}

// IndexApplyRouterEventJSON is kvhash_index_apply_router_event_json.
func IndexApplyRouterEventJSON(h uint64, data []byte) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	return x.ApplyRouterEventJSON(data)
}

// IndexApplyStored is kvhash_index_apply_stored: blockHashes[i] and
// tokensHashes[i] describe block i.
func IndexApplyStored(h, workerID uint64, dpRank uint32, eventID uint64, hasParent bool, parent uint64,
	blockHashes, tokensHashes []uint64) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	if len(blockHashes) != len(tokensHashes) {
		return invalidf("%d block hashes but %d tokens hashes", len(blockHashes), len(tokensHashes))
	}
	blocks := make([]core.StoredBlock, len(blockHashes))
	for i := range blocks {
		blocks[i] = core.StoredBlock{BlockHash: blockHashes[i], TokensHash: tokensHashes[i]}
	}
	var parentHash *uint64
	if hasParent {
		parentHash = &parent
	}
	return x.ApplyStored(core.Worker{ID: workerID, DPRank: dpRank}, eventID, parentHash, blocks)
}

// IndexApplyRemoved is kvhash_index_apply_removed.
func IndexApplyRemoved(h, workerID uint64, dpRank uint32, eventID uint64, blockHashes []uint64) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	return x.ApplyRemoved(core.Worker{ID: workerID, DPRank: dpRank}, eventID, blockHashes)
}

// IndexClearWorker is kvhash_index_clear_worker.
func IndexClearWorker(h, workerID uint64, dpRank uint32) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	x.ClearWorker(core.Worker{ID: workerID, DPRank: dpRank})
	return nil
}

// IndexClearAllBlocks is kvhash_index_clear_all_blocks.
func IndexClearAllBlocks(h, workerID uint64) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	x.ClearAllBlocks(workerID)
	return nil
}

// IndexRemoveWorker is kvhash_index_remove_worker.
func IndexRemoveWorker(h, workerID uint64) error {
	x, err := indexes.get(h)
	if err != nil {
		return err
	}
	x.RemoveWorker(workerID)
	return nil
}

// matchScratch recycles the match lists of IndexFindMatches, so that a
// query allocates nothing in the steady state.
var matchScratch = sync.Pool{New: func() any { return new([]core.Match) }}

// IndexFindMatches is kvhash_index_find_matches: the matches go to four
// parallel arrays, each with room for len(workerIDs) entries (the export
// views all four with the caller's one capacity).
func IndexFindMatches(h uint64, localHashes []uint64, earlyExit bool,
	workerIDs []uint64, dpRanks, scores []uint32, treeSizes []uint64) (int, error) {
	x, err := indexes.get(h)
	if err != nil {
		return 0, err
	}
	capacity := min(len(workerIDs), len(dpRanks), len(scores), len(treeSizes))
	scratch := matchScratch.Get().(*[]core.Match)
	defer matchScratch.Put(scratch)
	matches := x.AppendMatches((*scratch)[:0], localHashes, earlyExit)
	*scratch = matches[:0]
	if len(matches) > capacity {
		return len(matches), tooSmall("the match arrays", capacity, len(matches))
	}
	for i, m := range matches {
		workerIDs[i], dpRanks[i] = m.Worker.ID, m.Worker.DPRank
		scores[i], treeSizes[i] = m.Score, m.TreeSize
	}
	return len(matches), nil
}

// IndexWorkers is kvhash_index_workers.
func IndexWorkers(h uint64, workerIDs []uint64, dpRanks []uint32) (int, error) {
	x, err := indexes.get(h)
	if err != nil {
		return 0, err
	}
	capacity := min(len(workerIDs), len(dpRanks))
	workers := x.Workers()
	if len(workers) > capacity {
		return len(workers), tooSmall("the worker arrays", capacity, len(workers))
	}
	for i, w := range workers {
		workerIDs[i], dpRanks[i] = w.ID, w.DPRank
	}
	return len(workers), nil
}

// IndexDumpJSONL is kvhash_index_dump_jsonl: the router events of
// Index.Dump as JSON Lines, into buf.
func IndexDumpJSONL(h uint64, buf []byte) (int, error) {
	x, err := indexes.get(h)
	if err != nil {
		return 0, err
	}
	var data []byte
	for _, ev := range x.Dump() {
		if data, err = ev.AppendJSON(data); err != nil {
			return 0, err
		}
		data = append(data, '\n')
	}
	return copyAll(buf, data, "buf")
}

// IndexStatsJSON is kvhash_index_stats_json.
func IndexStatsJSON(h uint64, buf []byte) (int, error) {
	x, err := indexes.get(h)
	if err != nil {
		return 0, err
	}
	data, err := x.Stats().MarshalJSON()
	if err != nil {
		return 0, err
	}
	return copyAll(buf, data, "buf")
}

// copyAll copies all of data into dst, or nothing if it does not fit.
func copyAll(dst, data []byte, name string) (int, error) {
	if len(data) > len(dst) {
		return len(data), tooSmall(name, len(dst), len(data))
	}
	return copy(dst, data), nil
}

// IndexBlocks is the number of blocks the workers of index h hold
// together, the size of its dump (the WASM module sizes its memory
// request by it).
func IndexBlocks(h uint64) (uint64, error) {
	x, err := indexes.get(h)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, w := range x.Stats().Workers {
		n += w.Blocks
	}
	return n, nil
}
