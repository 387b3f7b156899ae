//go:build wasip1

package main

import "github.com/kvhash/kvhash/internal/abi"

//go:wasmexport kvhash_seed
func kvhash_seed(lora, loraLen, ns, nsLen uint32) (seed uint64) {
	defer catchValue(&seed)
	var a abi.Args
	l := str(&mem, &a, lora, loraLen, "lora")
	s := str(&mem, &a, ns, nsLen, "ns")
	if a.Err != nil {
		fail(a.Err)
		return 0
	}
	return abi.Seed(l, s)
}

//go:wasmexport kvhash_raw_hash
func kvhash_raw_hash(data, n, outHash uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	hash := out[uint64](&mem, &a, outHash, "out_hash")
	b := view[byte](&mem, &a, data, n, "data")
	if a.Err != nil {
		return fail(a.Err)
	}
	*hash = abi.RawHash(b)
	return int32(abi.StatusOK)
}

//go:wasmexport kvhash_chain_step
func kvhash_chain_step(parent, local uint64) (h uint64) {
	defer catchValue(&h)
	return abi.ChainStep(parent, local)
}

//go:wasmexport kvhash_block_count
func kvhash_block_count(nTokens uint32, blockSize int64, eagle int32, outCount uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	count := out[uint32](&mem, &a, outCount, "out_count")
	if a.Err != nil {
		return fail(a.Err)
	}
	n, err := abi.BlockCount(uint64(nTokens), blockSize, flag(eagle))
	setLen(count, n)
	return fail(err)
}

//go:wasmexport kvhash_block_hashes
func kvhash_block_hashes(tokens, nTokens uint32, blockSize int64,
	lora, loraLen, ns, nsLen uint32, eagle int32,
	mmHashes, mmCounts, mmBlocks uint32,
	outPtr, outCap, outLen uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	in := hashInput(&a, tokens, nTokens, blockSize, lora, loraLen, ns, nsLen, eagle, mmHashes, mmCounts, mmBlocks)
	dst := view[uint64](&mem, &a, outPtr, outCap, "out")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	n, err := abi.BlockHashes(in, dst)
	setLen(length, n)
	return fail(err)
}

//go:wasmexport kvhash_block_and_sequence_hashes
func kvhash_block_and_sequence_hashes(tokens, nTokens uint32, blockSize int64,
	lora, loraLen, ns, nsLen uint32, eagle int32,
	mmHashes, mmCounts, mmBlocks uint32,
	outLocal, outSequence, outCap, outLen uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	in := hashInput(&a, tokens, nTokens, blockSize, lora, loraLen, ns, nsLen, eagle, mmHashes, mmCounts, mmBlocks)
	local := view[uint64](&mem, &a, outLocal, outCap, "out_local")
	seq := view[uint64](&mem, &a, outSequence, outCap, "out_sequence")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	n, err := abi.BlockAndSequenceHashes(in, local, seq)
	setLen(length, n)
	return fail(err)
}

//go:wasmexport kvhash_sequence_hashes
func kvhash_sequence_hashes(blockHashes, n, outPtr, outCap, outLen uint32) (st int32) {
	defer catch(&st)
	var a abi.Args
	length := out[uint32](&mem, &a, outLen, "out_len")
	in := view[uint64](&mem, &a, blockHashes, n, "block_hashes")
	dst := view[uint64](&mem, &a, outPtr, outCap, "out")
	if a.Err != nil {
		setLen(length, 0)
		return fail(a.Err)
	}
	m, err := abi.SequenceHashes(in, dst)
	setLen(length, m)
	return fail(err)
}

// hashInput views the arguments the block-hashing exports share.
func hashInput(a *abi.Args, tokens, nTokens uint32, blockSize int64,
	lora, loraLen, ns, nsLen uint32, eagle int32, mmHashes, mmCounts, mmBlocks uint32) abi.HashInput {
	in := abi.HashInput{BlockSize: blockSize, Eagle: flag(eagle)}
	in.Tokens = view[uint32](&mem, a, tokens, nTokens, "tokens")
	in.Lora = str(&mem, a, lora, loraLen, "lora")
	in.Namespace = str(&mem, a, ns, nsLen, "ns")
	in.MMCounts = view[uint32](&mem, a, mmCounts, mmBlocks, "mm_counts")
	in.MMHashes = view[uint64](&mem, a, mmHashes, mmLen(a, in.MMCounts), "mm_hashes")
	return in
}
