//go:build wasip1

package main

import "github.com/kvhash/kvhash/internal/abi"

//go:wasmexport kvhash_index_new
func kvhash_index_new(mode int32, outHandle uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	handle := out[uint64](&mem, &a, outHandle, "out_handle")
	if a.Err != nil {
		return fail(a.Err)
	}
	if err := budget.admit(newIndexBytes, "a new index"); err != nil {
		return fail(err)
	}
	h, err := abi.IndexNew(mode)
	*handle = h
	return fail(err)
}

//go:wasmexport kvhash_index_free
func kvhash_index_free(h uint64) (st int32) {
	defer catch(&st)
	return fail(abi.IndexFree(h))
}

//go:wasmexport kvhash_index_set_mode
func kvhash_index_set_mode(h uint64, mode int32) (st int32) {
	defer catch(&st)
	return fail(abi.IndexSetMode(h, mode))
}

//go:wasmexport kvhash_index_apply_json
func kvhash_index_apply_json(h, workerID uint64, json, n uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	data := view[byte](&mem, &a, json, n, "json")
	if a.Err != nil {
		return fail(a.Err)
	}
	if err := budget.admit(eventJSONBytes(n), "applying an event"); err != nil {
		return fail(err)
	}
	return fail(abi.IndexApplyJSON(h, workerID, data))
}

//go:wasmexport kvhash_index_apply_router_event_json
func kvhash_index_apply_router_event_json(h uint64, json, n uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	data := view[byte](&mem, &a, json, n, "json")
	if a.Err != nil {
		return fail(a.Err)
	}
	if err := budget.admit(eventJSONBytes(n), "applying an event"); err != nil {
		return fail(err)
	}
	return fail(abi.IndexApplyRouterEventJSON(h, data))
}

//go:wasmexport kvhash_index_apply_stored
func kvhash_index_apply_stored(h, workerID uint64, dpRank uint32, eventID uint64,
	hasParent int32, parent uint64, blockHashes, tokensHashes, n uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	bh := view[uint64](&mem, &a, blockHashes, n, "block_hashes")
	th := view[uint64](&mem, &a, tokensHashes, n, "tokens_hashes")
	if a.Err != nil {
		return fail(a.Err)
	}
	if err := budget.admit(storedBlocksBytes(n), "applying a stored event"); err != nil {
		return fail(err)
	}
	return fail(abi.IndexApplyStored(h, workerID, dpRank, eventID, flag(hasParent), parent, bh, th))
}

//go:wasmexport kvhash_index_apply_removed
func kvhash_index_apply_removed(h, workerID uint64, dpRank uint32, eventID uint64, blockHashes, n uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	bh := view[uint64](&mem, &a, blockHashes, n, "block_hashes")
	if a.Err != nil {
		return fail(a.Err)
	}
	return fail(abi.IndexApplyRemoved(h, workerID, dpRank, eventID, bh))
}

//go:wasmexport kvhash_index_clear_worker
func kvhash_index_clear_worker(h, workerID uint64, dpRank uint32) (st int32) {
	defer catch(&st)
	return fail(abi.IndexClearWorker(h, workerID, dpRank))
}

//go:wasmexport kvhash_index_clear_all_blocks
func kvhash_index_clear_all_blocks(h, workerID uint64) (st int32) {
	defer catch(&st)
	return fail(abi.IndexClearAllBlocks(h, workerID))
}

//go:wasmexport kvhash_index_remove_worker
func kvhash_index_remove_worker(h, workerID uint64) (st int32) {
	defer catch(&st)
	return fail(abi.IndexRemoveWorker(h, workerID))
}

//go:wasmexport kvhash_index_find_matches
func kvhash_index_find_matches(h uint64, localHashes, n uint32, earlyExit int32,
	workerIDs, dpRanks, scores, treeSizes, capacity, outLen uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	q := view[uint64](&mem, &a, localHashes, n, "local_hashes")
	ids := view[uint64](&mem, &a, workerIDs, capacity, "worker_ids")
	ranks := view[uint32](&mem, &a, dpRanks, capacity, "dp_ranks")
	sc := view[uint32](&mem, &a, scores, capacity, "scores")
	sizes := view[uint64](&mem, &a, treeSizes, capacity, "tree_sizes")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	m, err := abi.IndexFindMatches(h, q, flag(earlyExit), ids, ranks, sc, sizes)
	setLen(length, m)
	return fail(err)
}

//go:wasmexport kvhash_index_dump_jsonl
func kvhash_index_dump_jsonl(h uint64, buf, capacity, outLen uint32) (st int32) {
	defer catch(&st)
	// The dump is built whole before it is copied out: ask for room for
	// it first (an unknown handle fails in writeBytes, as for any call).
	if blocks, err := abi.IndexBlocks(h); err == nil {
		if err := budget.admit(dumpBytes(blocks), "dumping the index"); err != nil {
			if length := out[uint32](&mem, &abi.Args{}, outLen, "out_len"); length != nil {
				*length = 0
			}
			return fail(err)
		}
	}
	return writeBytes(abi.IndexDumpJSONL, h, buf, capacity, outLen)
}

//go:wasmexport kvhash_index_stats_json
func kvhash_index_stats_json(h uint64, buf, capacity, outLen uint32) (st int32) {
	defer catch(&st)
	return writeBytes(abi.IndexStatsJSON, h, buf, capacity, outLen)
}

// writeBytes runs an export that fills a byte buffer.
func writeBytes(fn func(uint64, []byte) (int, error), h uint64, buf, capacity, outLen uint32) int32 {
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	dst := view[byte](&mem, &a, buf, capacity, "buf")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	n, err := fn(h, dst)
	setLen(length, n)
	return fail(err)
}

//go:wasmexport kvhash_index_workers
func kvhash_index_workers(h uint64, workerIDs, dpRanks, capacity, outLen uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	ids := view[uint64](&mem, &a, workerIDs, capacity, "worker_ids")
	ranks := view[uint32](&mem, &a, dpRanks, capacity, "dp_ranks")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	n, err := abi.IndexWorkers(h, ids, ranks)
	setLen(length, n)
	return fail(err)
}
