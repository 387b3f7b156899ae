package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"unsafe"

	"github.com/kvhash/kvhash/internal/abi"
)

//export kvhash_index_new
func kvhash_index_new(mode C.int32_t, outHandle *C.uint64_t) (st C.int32_t) {
	defer catch(&st)
	if outHandle == nil {
		return fail(abi.NullOutput("out_handle"))
	}
	h, err := abi.IndexNew(int32(mode))
	*outHandle = C.uint64_t(h)
	return fail(err)
}

//export kvhash_index_free
func kvhash_index_free(h C.uint64_t) (st C.int32_t) {
	defer catch(&st)
	return fail(abi.IndexFree(uint64(h)))
}

//export kvhash_index_set_mode
func kvhash_index_set_mode(h C.uint64_t, mode C.int32_t) (st C.int32_t) {
	defer catch(&st)
	return fail(abi.IndexSetMode(uint64(h), int32(mode)))
}

//export kvhash_index_apply_json
func kvhash_index_apply_json(h, workerID C.uint64_t, json *C.char, n C.size_t) (st C.int32_t) {
	defer catch(&st)
	var a abi.Args
	data := abi.View(&a, (*byte)(unsafe.Pointer(json)), uint64(n), "json")
	if a.Err != nil {
		return fail(a.Err)
	}
	return fail(abi.IndexApplyJSON(uint64(h), uint64(workerID), data))
}

//export kvhash_index_apply_router_event_json
func kvhash_index_apply_router_event_json(h C.uint64_t, json *C.char, n C.size_t) (st C.int32_t) {
	defer catch(&st)
	var a abi.Args
	data := abi.View(&a, (*byte)(unsafe.Pointer(json)), uint64(n), "json")
	if a.Err != nil {
		return fail(a.Err)
	}
	return fail(abi.IndexApplyRouterEventJSON(uint64(h), data))
}

//export kvhash_index_apply_stored
func kvhash_index_apply_stored(h, workerID C.uint64_t, dpRank C.uint32_t, eventID C.uint64_t,
	hasParent C.int32_t, parent C.uint64_t, blockHashes, tokensHashes *C.uint64_t, n C.size_t) (st C.int32_t) {
	defer catch(&st)
	var a abi.Args
	bh := abi.View(&a, (*uint64)(blockHashes), uint64(n), "block_hashes")
	th := abi.View(&a, (*uint64)(tokensHashes), uint64(n), "tokens_hashes")
	if a.Err != nil {
		return fail(a.Err)
	}
	return fail(abi.IndexApplyStored(uint64(h), uint64(workerID), uint32(dpRank), uint64(eventID),
		flag(hasParent), uint64(parent), bh, th))
}

//export kvhash_index_apply_removed
func kvhash_index_apply_removed(h, workerID C.uint64_t, dpRank C.uint32_t, eventID C.uint64_t,
	blockHashes *C.uint64_t, n C.size_t) (st C.int32_t) {
	defer catch(&st)
	var a abi.Args
	bh := abi.View(&a, (*uint64)(blockHashes), uint64(n), "block_hashes")
	if a.Err != nil {
		return fail(a.Err)
	}
	return fail(abi.IndexApplyRemoved(uint64(h), uint64(workerID), uint32(dpRank), uint64(eventID), bh))
}

//export kvhash_index_clear_worker
func kvhash_index_clear_worker(h, workerID C.uint64_t, dpRank C.uint32_t) (st C.int32_t) {
	defer catch(&st)
	return fail(abi.IndexClearWorker(uint64(h), uint64(workerID), uint32(dpRank)))
}

//export kvhash_index_clear_all_blocks
func kvhash_index_clear_all_blocks(h, workerID C.uint64_t) (st C.int32_t) {
	defer catch(&st)
	return fail(abi.IndexClearAllBlocks(uint64(h), uint64(workerID)))
}

//export kvhash_index_remove_worker
func kvhash_index_remove_worker(h, workerID C.uint64_t) (st C.int32_t) {
	defer catch(&st)
	return fail(abi.IndexRemoveWorker(uint64(h), uint64(workerID)))
}

//export kvhash_index_find_matches
func kvhash_index_find_matches(h C.uint64_t, localHashes *C.uint64_t, n C.size_t, earlyExit C.int32_t,
	workerIDs *C.uint64_t, dpRanks, scores *C.uint32_t, treeSizes *C.uint64_t,
	capacity C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	q := abi.View(&a, (*uint64)(localHashes), uint64(n), "local_hashes")
	ids := abi.View(&a, (*uint64)(workerIDs), uint64(capacity), "worker_ids")
	ranks := abi.View(&a, (*uint32)(dpRanks), uint64(capacity), "dp_ranks")
	sc := abi.View(&a, (*uint32)(scores), uint64(capacity), "scores")
	sizes := abi.View(&a, (*uint64)(treeSizes), uint64(capacity), "tree_sizes")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	m, err := abi.IndexFindMatches(uint64(h), q, flag(earlyExit), ids, ranks, sc, sizes)
	*outLen = C.size_t(m)
	return fail(err)
}

//export kvhash_index_dump_jsonl
func kvhash_index_dump_jsonl(h C.uint64_t, buf *C.char, capacity C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	return writeBytes(abi.IndexDumpJSONL, h, buf, capacity, outLen)
}

//export kvhash_index_stats_json
func kvhash_index_stats_json(h C.uint64_t, buf *C.char, capacity C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	return writeBytes(abi.IndexStatsJSON, h, buf, capacity, outLen)
}

// writeBytes runs an export that fills a char buffer.
func writeBytes(fn func(uint64, []byte) (int, error), h C.uint64_t, buf *C.char, capacity C.size_t, outLen *C.size_t) C.int32_t {
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	dst := abi.View(&a, (*byte)(unsafe.Pointer(buf)), uint64(capacity), "buf")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	n, err := fn(uint64(h), dst)
	*outLen = C.size_t(n)
	return fail(err)
}

//export kvhash_index_workers
func kvhash_index_workers(h C.uint64_t, workerIDs *C.uint64_t, dpRanks *C.uint32_t, capacity C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	ids := abi.View(&a, (*uint64)(workerIDs), uint64(capacity), "worker_ids")
	ranks := abi.View(&a, (*uint32)(dpRanks), uint64(capacity), "dp_ranks")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	n, err := abi.IndexWorkers(uint64(h), ids, ranks)
	*outLen = C.size_t(n)
	return fail(err)
}
