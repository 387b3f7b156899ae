package wasmhost

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvhash/kvhash/core"
	"github.com/tetratelabs/wazero/api"
)

// The instance methods below marshal one export's arguments into the
// scratch allocation, call it and read the results. They hold no logic
// about hashing: block counts, validation and every value come from the
// module.

func boolArg(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (in *instance) blockHashes(dst []uint64, tokens []uint32, blockSize int, opts core.Options) ([]uint64, error) {
	out, n, err := in.hashPrompt(in.fn.blockHashes, 1, tokens, blockSize, opts)
	if err != nil {
		return dst, err
	}
	return in.appendU64s(dst, out[0], n)
}

// blockAndSequenceHashes is blockHashes and sequenceHashes in one call of
// kvhash_block_and_sequence_hashes.
func (in *instance) blockAndSequenceHashes(local, seq []uint64, tokens []uint32, blockSize int, opts core.Options) ([]uint64, []uint64, error) {
	out, n, err := in.hashPrompt(in.fn.blockAndSequenceHashes, 2, tokens, blockSize, opts)
	if err != nil {
		return local, seq, err
	}
	gotLocal, err := in.appendU64s(local, out[0], n)
	if err != nil {
		return local, seq, err
	}
	gotSeq, err := in.appendU64s(seq, out[1], n)
	if err != nil {
		return local, seq, err
	}
	return gotLocal, gotSeq, nil
}

// hashPrompt calls a block-hashing export, whose arguments are a prompt
// and its options followed by outputs output pointers (one for
// kvhash_block_hashes, two for kvhash_block_and_sequence_hashes), their
// common capacity and out_len. It returns the module address of each
// output and the number of hashes in each, to be read before the next
// call reuses the scratch allocation.
func (in *instance) hashPrompt(f api.Function, outputs int, tokens []uint32, blockSize int, opts core.Options) ([2]uint64, uint64, error) {
	var outPtrs [2]uint64
	name := f.Definition().Name()
	mmTotal := 0
	for _, block := range opts.MMHashes {
		mmTotal += len(block)
	}
	// len(tokens)/blockSize bounds the block count (with or without
	// Eagle), so no extra call is needed to size the output; the module
	// decides the count and rejects a bad block size.
	outCap := 0
	if blockSize > 0 {
		outCap = len(tokens) / blockSize
	}
	for range 2 {
		var l layout
		outLenOff := l.add(8)
		tokOff := l.add(4 * uint64(len(tokens)))
		loraOff := l.add(uint64(len(opts.LoraName)))
		nsOff := l.add(uint64(len(opts.CacheNamespace)))
		countsOff := l.add(4 * uint64(len(opts.MMHashes)))
		mmOff := l.add(8 * uint64(mmTotal))
		var outOffs [2]uint64
		for i := range outputs {
			outOffs[i] = l.add(8 * uint64(outCap))
		}
		base, err := in.reserve(l.size)
		if err != nil {
			return outPtrs, 0, err
		}
		if err := in.writeU32s(addr(base, tokOff, len(tokens)), tokens); err != nil {
			return outPtrs, 0, err
		}
		if err := in.writeString(addr(base, loraOff, len(opts.LoraName)), opts.LoraName); err != nil {
			return outPtrs, 0, err
		}
		if err := in.writeString(addr(base, nsOff, len(opts.CacheNamespace)), opts.CacheNamespace); err != nil {
			return outPtrs, 0, err
		}
		if len(opts.MMHashes) > 0 {
			if err := in.writeMM(base, countsOff, mmOff, opts.MMHashes); err != nil {
				return outPtrs, 0, err
			}
		}
		outLen := uint64(base) + outLenOff
		// A fixed array keeps the argument list off the heap.
		var argv [15]uint64
		args := append(argv[:0],
			addr(base, tokOff, len(tokens)), uint64(len(tokens)), uint64(int64(blockSize)),
			addr(base, loraOff, len(opts.LoraName)), uint64(len(opts.LoraName)),
			addr(base, nsOff, len(opts.CacheNamespace)), uint64(len(opts.CacheNamespace)),
			boolArg(opts.Eagle),
			addr(base, mmOff, mmTotal), addr(base, countsOff, len(opts.MMHashes)), uint64(len(opts.MMHashes)))
		for i := range outputs {
			outPtrs[i] = addr(base, outOffs[i], outCap)
			args = append(args, outPtrs[i])
		}
		args = append(args, uint64(outCap), outLen)
		st, err := in.callStatus(f, args...)
		if st == StatusBufferTooSmall {
			// Not expected (see outCap), but the module is the authority
			// on the count: retry once with what it asked for.
			need, rerr := in.readU32(outLen)
			if rerr != nil || int(need) <= outCap {
				return outPtrs, 0, err
			}
			outCap = int(need)
			continue
		}
		if err != nil {
			return outPtrs, 0, err
		}
		n, err := in.readU32(outLen)
		if err != nil {
			return outPtrs, 0, err
		}
		if int(n) > outCap {
			return outPtrs, 0, fmt.Errorf("%s: module reported %d hashes for a buffer of %d", name, n, outCap)
		}
		return outPtrs, uint64(n), nil
	}
	return outPtrs, 0, fmt.Errorf("%s: output size kept changing", name)
}

// writeMM writes the per-block multimodal counts and their concatenated
// hashes, the ABI's flat form of Options.MMHashes.
func (in *instance) writeMM(base uint32, countsOff, mmOff uint64, mm [][]uint64) error {
	counts, err := in.view(uint64(base)+countsOff, 4*uint64(len(mm)))
	if err != nil {
		return err
	}
	for i, block := range mm {
		if uint64(len(block)) > math.MaxUint32 {
			return fmt.Errorf("%w: %d multimodal hashes in block %d", core.ErrInvalidArgument, len(block), i)
		}
		binary.LittleEndian.PutUint32(counts[4*i:], uint32(len(block)))
	}
	ptr := uint64(base) + mmOff
	for _, block := range mm {
		if err := in.writeU64s(ptr, block); err != nil {
			return err
		}
		ptr += 8 * uint64(len(block))
	}
	return nil
}

func (in *instance) sequenceHashes(dst, blockHashes []uint64) ([]uint64, error) {
	n := len(blockHashes)
	var l layout
	outLenOff := l.add(8)
	inOff := l.add(8 * uint64(n))
	outOff := l.add(8 * uint64(n))
	base, err := in.reserve(l.size)
	if err != nil {
		return dst, err
	}
	if err := in.writeU64s(addr(base, inOff, n), blockHashes); err != nil {
		return dst, err
	}
	outLen := uint64(base) + outLenOff
	if _, err := in.callStatus(in.fn.sequenceHashes,
		addr(base, inOff, n), uint64(n), addr(base, outOff, n), uint64(n), outLen); err != nil {
		return dst, err
	}
	got, err := in.readU32(outLen)
	if err != nil {
		return dst, err
	}
	if int(got) > n {
		return dst, fmt.Errorf("kvhash_sequence_hashes: module reported %d hashes for a buffer of %d", got, n)
	}
	return in.appendU64s(dst, uint64(base)+outOff, uint64(got))
}

func (in *instance) seed(lora, ns string) (uint64, error) {
	var l layout
	loraOff := l.add(uint64(len(lora)))
	nsOff := l.add(uint64(len(ns)))
	base, err := in.reserve(l.size)
	if err != nil {
		return 0, err
	}
	if err := in.writeString(addr(base, loraOff, len(lora)), lora); err != nil {
		return 0, err
	}
	if err := in.writeString(addr(base, nsOff, len(ns)), ns); err != nil {
		return 0, err
	}
	return in.call(in.fn.seed,
		addr(base, loraOff, len(lora)), uint64(len(lora)), addr(base, nsOff, len(ns)), uint64(len(ns)))
}

func (in *instance) rawHash(data []byte) (uint64, error) {
	var l layout
	outOff := l.add(8)
	dataOff := l.add(uint64(len(data)))
	base, err := in.reserve(l.size)
	if err != nil {
		return 0, err
	}
	if err := in.writeBytes(addr(base, dataOff, len(data)), data); err != nil {
		return 0, err
	}
	if _, err := in.callStatus(in.fn.rawHash, addr(base, dataOff, len(data)), uint64(len(data)), uint64(base)+outOff); err != nil {
		return 0, err
	}
	b, err := in.view(uint64(base)+outOff, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (in *instance) blockCount(numTokens, blockSize int, eagle bool) (int, error) {
	if numTokens < 0 || uint64(numTokens) > math.MaxUint32 {
		// size_t is 32 bits in the module: a count it cannot hold.
		return 0, fmt.Errorf("%w: token count %d out of the module's range", core.ErrInvalidArgument, numTokens)
	}
	base, err := in.reserve(8)
	if err != nil {
		return 0, err
	}
	if _, err := in.callStatus(in.fn.blockCount,
		uint64(numTokens), uint64(int64(blockSize)), boolArg(eagle), uint64(base)); err != nil {
		return 0, err
	}
	n, err := in.readU32(uint64(base))
	return int(n), err
}

// text calls a (buf, cap) -> len export such as kvhash_version.
func (in *instance) text(f api.Function) (string, error) {
	size := uint64(64)
	for range 2 {
		base, err := in.reserve(size)
		if err != nil {
			return "", err
		}
		r, err := in.call(f, uint64(base), size)
		if err != nil {
			return "", err
		}
		n := int64(api.DecodeI32(r))
		if n < 0 {
			return "", &Error{Op: f.Definition().Name(), Status: Status(n), Message: in.lastErrorMessage()}
		}
		// The copy is NUL-terminated: it is whole only if n < size.
		if uint64(n) < size {
			return in.readString(uint64(base), uint64(n))
		}
		size = uint64(n) + 1
	}
	return "", fmt.Errorf("kvhash: version text kept growing")
}
