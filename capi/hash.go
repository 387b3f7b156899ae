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

// versionC and specVersionC are allocated once and never freed: the
// strings kvhash_version and kvhash_spec_version return stay valid for
// the life of the process.
var (
	versionC     = C.CString(abi.Version())
	specVersionC = C.CString(abi.SpecVersion())
)

//export kvhash_version
func kvhash_version() (v *C.char) {
	defer catchValue(&v)
	return versionC
}

//export kvhash_spec_version
func kvhash_spec_version() (v *C.char) {
	defer catchValue(&v)
	return specVersionC
}

//export kvhash_last_error
func kvhash_last_error(buf *C.char, capacity C.size_t) (n C.size_t) {
	defer catchValue(&n)
	return copyLastError(buf, capacity)
}

//export kvhash_seed
func kvhash_seed(lora *C.char, loraLen C.size_t, ns *C.char, nsLen C.size_t) (seed C.uint64_t) {
	defer catchValue(&seed)
	var a abi.Args
	l := abi.String(&a, (*byte)(unsafe.Pointer(lora)), uint64(loraLen), "lora")
	s := abi.String(&a, (*byte)(unsafe.Pointer(ns)), uint64(nsLen), "ns")
	if a.Err != nil {
		fail(a.Err)
		return 0
	}
	return C.uint64_t(abi.Seed(l, s))
}

//export kvhash_raw_hash
func kvhash_raw_hash(data *C.uint8_t, n C.size_t, outHash *C.uint64_t) (st C.int32_t) {
	defer catch(&st)
	if outHash == nil {
		return fail(abi.NullOutput("out_hash"))
	}
	var a abi.Args
	b := abi.View(&a, (*byte)(unsafe.Pointer(data)), uint64(n), "data")
	if a.Err != nil {
		return fail(a.Err)
	}
	*outHash = C.uint64_t(abi.RawHash(b))
	return C.int32_t(abi.StatusOK)
}

//export kvhash_chain_step
func kvhash_chain_step(parent, local C.uint64_t) (h C.uint64_t) {
	defer catchValue(&h)
	return C.uint64_t(abi.ChainStep(uint64(parent), uint64(local)))
}

//export kvhash_block_count
func kvhash_block_count(nTokens C.size_t, blockSize C.int64_t, eagle C.int32_t, outCount *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outCount == nil {
		return fail(abi.NullOutput("out_count"))
	}
	n, err := abi.BlockCount(uint64(nTokens), int64(blockSize), flag(eagle))
	*outCount = C.size_t(n)
	return fail(err)
}

//export kvhash_block_hashes
func kvhash_block_hashes(tokens *C.uint32_t, nTokens C.size_t, blockSize C.int64_t,
	lora *C.char, loraLen C.size_t, ns *C.char, nsLen C.size_t, eagle C.int32_t,
	mmHashes *C.uint64_t, mmCounts *C.uint32_t, mmBlocks C.size_t,
	out *C.uint64_t, outCap C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	in := hashInput(&a, tokens, nTokens, blockSize, lora, loraLen, ns, nsLen, eagle, mmHashes, mmCounts, mmBlocks)
	dst := abi.View(&a, (*uint64)(out), uint64(outCap), "out")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	n, err := abi.BlockHashes(in, dst)
	*outLen = C.size_t(n)
	return fail(err)
}

//export kvhash_block_and_sequence_hashes
func kvhash_block_and_sequence_hashes(tokens *C.uint32_t, nTokens C.size_t, blockSize C.int64_t,
	lora *C.char, loraLen C.size_t, ns *C.char, nsLen C.size_t, eagle C.int32_t,
	mmHashes *C.uint64_t, mmCounts *C.uint32_t, mmBlocks C.size_t,
	outLocal, outSequence *C.uint64_t, outCap C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	in := hashInput(&a, tokens, nTokens, blockSize, lora, loraLen, ns, nsLen, eagle, mmHashes, mmCounts, mmBlocks)
	local := abi.View(&a, (*uint64)(outLocal), uint64(outCap), "out_local")
	seq := abi.View(&a, (*uint64)(outSequence), uint64(outCap), "out_sequence")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	n, err := abi.BlockAndSequenceHashes(in, local, seq)
	*outLen = C.size_t(n)
	return fail(err)
}

//export kvhash_sequence_hashes
func kvhash_sequence_hashes(blockHashes *C.uint64_t, n C.size_t, out *C.uint64_t, outCap C.size_t, outLen *C.size_t) (st C.int32_t) {
	defer catch(&st)
	if outLen == nil {
		return fail(abi.NullOutput("out_len"))
	}
	var a abi.Args
	in := abi.View(&a, (*uint64)(blockHashes), uint64(n), "block_hashes")
	dst := abi.View(&a, (*uint64)(out), uint64(outCap), "out")
	if a.Err != nil {
		*outLen = 0
		return fail(a.Err)
	}
	m, err := abi.SequenceHashes(in, dst)
	*outLen = C.size_t(m)
	return fail(err)
}

// hashInput views the arguments the block-hashing exports share.
func hashInput(a *abi.Args, tokens *C.uint32_t, nTokens C.size_t, blockSize C.int64_t,
	lora *C.char, loraLen C.size_t, ns *C.char, nsLen C.size_t, eagle C.int32_t,
	mmHashes *C.uint64_t, mmCounts *C.uint32_t, mmBlocks C.size_t) abi.HashInput {
	in := abi.HashInput{BlockSize: int64(blockSize), Eagle: flag(eagle)}
	in.Tokens = abi.View(a, (*uint32)(tokens), uint64(nTokens), "tokens")
	in.Lora = abi.String(a, (*byte)(unsafe.Pointer(lora)), uint64(loraLen), "lora")
	in.Namespace = abi.String(a, (*byte)(unsafe.Pointer(ns)), uint64(nsLen), "ns")
	in.MMCounts = abi.View(a, (*uint32)(mmCounts), uint64(mmBlocks), "mm_counts")
	in.MMHashes = abi.View(a, (*uint64)(mmHashes), abi.MMHashCount(in.MMCounts), "mm_hashes")
	return in
}
