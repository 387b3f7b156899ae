package abi

import (
	"math"
	"unsafe"

	"github.com/kvhash/kvhash/core"
)

// Version and SpecVersion are the strings of kvhash_version and
// kvhash_spec_version.
func Version() string     { return core.Version }
func SpecVersion() string { return core.SpecVersion }

// Seed is kvhash_seed.
func Seed(lora, namespace string) uint64 { return core.Seed(lora, namespace) }

// RawHash is kvhash_raw_hash: XXH3-64 with the spec's seed over arbitrary
// bytes, so that a host can check its build against the raw-bytes vectors.
func RawHash(data []byte) uint64 { return core.RawHash(data) }

// ChainStep is kvhash_chain_step.
func ChainStep(parent, local uint64) uint64 { return core.ChainStep(parent, local) }

// BlockCount is kvhash_block_count.
func BlockCount(nTokens uint64, blockSize int64, eagle bool) (int, error) {
	var a Args
	n := Len(&a, nTokens, "n_tokens")
	bs := blockSizeInt(&a, blockSize)
	if a.Err != nil {
		return 0, a.Err
	}
	return core.BlockCount(n, bs, eagle)
}

// MMHashCount is the length of the flat mm_hashes array: the sum of
// mm_counts. It cannot overflow: the counts are uint32 and there are fewer
// than 2^47 of them.
func MMHashCount(mmCounts []uint32) uint64 {
	var total uint64
	for _, c := range mmCounts {
		total += uint64(c)
	}
	return total
}

// HashInput is what the block-hashing exports take, as slices and strings
// over the caller's memory.
type HashInput struct {
	Tokens          []uint32
	BlockSize       int64
	Lora, Namespace string
	Eagle           bool
	MMHashes        []uint64 // every block's multimodal hashes, concatenated
	MMCounts        []uint32 // MMCounts[i] of them belong to block i
}

// BlockHashes is kvhash_block_hashes: it writes the local hash of every
// full block into out and returns how many there are. When out is too
// short it writes nothing and returns the count needed with an
// ErrBufferTooSmall error.
func BlockHashes(in HashInput, out []uint64) (int, error) {
	bs, opts, n, err := hashArgs(in, "out", len(out))
	if err != nil {
		return n, err
	}
	// out has room for n hashes, so core appends in place: no allocation.
	got, err := core.AppendBlockHashes(out[:0], in.Tokens, bs, opts)
	if err != nil {
		return 0, err
	}
	return len(got), nil
}

// BlockAndSequenceHashes is kvhash_block_and_sequence_hashes: BlockHashes
// that also writes the blocks' sequence hashes into sequence, in core's
// one pass (cheaper than a second call for the chain, most of all across
// the WASM boundary). Both outputs must have room for every block; the
// shorter one is the capacity. Arguments and errors are BlockHashes'.
func BlockAndSequenceHashes(in HashInput, local, sequence []uint64) (int, error) {
	bs, opts, n, err := hashArgs(in, "each of out_local and out_sequence", min(len(local), len(sequence)))
	if err != nil {
		return n, err
	}
	// core would give the sequence hashes a fresh array when the two
	// outputs share memory, and the caller's sequence buffer would never
	// see them: a caller passing one buffer twice gets an error instead.
	if n > 0 && overlap(local[:n], sequence[:n]) {
		return 0, invalidf("out_local and out_sequence overlap; pass two separate buffers")
	}
	// Both have room for n hashes: core appends in place, no allocation.
	got, _, err := core.AppendBlockAndSequenceHashes(local[:0], sequence[:0], in.Tokens, bs, opts)
	if err != nil {
		return 0, err
	}
	return len(got), nil
}

// overlap reports whether two slices share any element's memory.
func overlap(a, b []uint64) bool {
	const size = uint64(unsafe.Sizeof(uint64(0)))
	a0 := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(a))))
	b0 := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	return a0 < b0+uint64(len(b))*size && b0 < a0+uint64(len(a))*size
}

// hashArgs checks what the block-hashing exports share and converts it
// for core: it returns the block size as core's int, the options with the
// multimodal hashes split per block, and the block count n, after checking
// that outputs with room for outCap hashes (named outName in the message)
// hold every block. On a too-small output n is the count needed, with an
// ErrBufferTooSmall error; on any other error n is 0.
func hashArgs(in HashInput, outName string, outCap int) (bs int, opts core.Options, n int, err error) {
	var a Args
	bs = blockSizeInt(&a, in.BlockSize)
	if a.Err != nil {
		return 0, core.Options{}, 0, a.Err
	}
	if n, err = core.BlockCount(len(in.Tokens), bs, in.Eagle); err != nil {
		return 0, core.Options{}, 0, err
	}
	opts = core.Options{LoraName: in.Lora, CacheNamespace: in.Namespace, Eagle: in.Eagle}
	if err := checkMMCounts(in.MMCounts, bs, in.Eagle); err != nil {
		return 0, core.Options{}, 0, err
	}
	if len(in.MMCounts) > 0 {
		if opts.MMHashes, err = splitMM(in.MMHashes, in.MMCounts); err != nil {
			return 0, core.Options{}, 0, err
		}
	}
	if n > outCap {
		if len(opts.MMHashes) > 0 {
			// Only core knows whether the multimodal entries fit the
			// blocks; an input error takes precedence over the size.
			if _, err := core.AppendBlockHashes(nil, in.Tokens, bs, opts); err != nil {
				return 0, core.Options{}, 0, err
			}
		}
		return 0, core.Options{}, n, tooSmall(outName, outCap, n)
	}
	return bs, opts, n, nil
}

// SequenceHashes is kvhash_sequence_hashes.
func SequenceHashes(blockHashes, out []uint64) (int, error) {
	n := len(blockHashes)
	if n > len(out) {
		return n, tooSmall("out", len(out), n)
	}
	return len(core.AppendSequenceHashes(out[:0], blockHashes)), nil
}

// maxMMPerBlock is the count of multimodal hashes a block may have
// whatever its size. A block's objects are those whose tokens overlap it,
// so a real block has at most one per token; a count above both is a
// length the caller got wrong. Refusing it matters in C, where the
// library cannot see the length of mm_hashes and takes sum(mm_counts) on
// trust: a count near 2^32 would make core copy 32 GB of the caller's
// memory and abort the process for lack of memory.
const maxMMPerBlock = 1 << 16

// checkMMCounts rejects a block count of multimodal hashes that no block
// of blockSize tokens (blockSize+1 with eagle) can have.
func checkMMCounts(counts []uint32, blockSize int, eagle bool) error {
	window := uint64(max(blockSize, 0))
	if eagle {
		window++
	}
	limit := max(window, maxMMPerBlock)
	for i, c := range counts {
		if uint64(c) > limit {
			return invalidf("mm_counts[%d] is %d, more multimodal hashes than a block can have "+
				"(at most %d: its token count, or %d if larger); mm_counts must count the values in mm_hashes",
				i, c, limit, maxMMPerBlock)
		}
	}
	return nil
}

// splitMM cuts the flat multimodal hashes into one slice per block.
func splitMM(flat []uint64, counts []uint32) ([][]uint64, error) {
	if total := MMHashCount(counts); total != uint64(len(flat)) {
		return nil, invalidf("mm_hashes has %d values but mm_counts add up to %d", len(flat), total)
	}
	perBlock := make([][]uint64, len(counts))
	for i, c := range counts {
		if c > 0 {
			perBlock[i], flat = flat[:c:c], flat[c:]
		}
	}
	return perBlock, nil
}

// blockSizeInt converts the ABI's int64 block size to core's int. Values
// that do not fit are invalid anyway; core rejects zero and negatives.
func blockSizeInt(a *Args, blockSize int64) int {
	if blockSize > math.MaxInt || blockSize < math.MinInt {
		a.Fail(invalidf("block_size %d is too large (at most %d)", blockSize, math.MaxInt))
		return 0
	}
	return int(blockSize)
}
