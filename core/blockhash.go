package core

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Options change what a local block hash covers. The zero value is plain
// spec v1: token bytes only, seed BaseSeed, one block per blockSize tokens.
type Options struct {
	// LoraName and CacheNamespace fold into the seed (see Seed); empty
	// means absent.
	LoraName       string
	CacheNamespace string
	// Eagle hashes windows of blockSize+1 tokens taken every blockSize
	// tokens, as speculative-decoding (EAGLE) engines name their blocks.
	Eagle bool
	// MMHashes[i] lists the multimodal object hashes of block i; they are
	// hashed after the block's tokens, in ascending order, so their order
	// here does not matter. Nil or empty means none. The slice may be
	// shorter than the number of blocks, never longer.
	MMHashes [][]uint64
}

// BlockCount returns how many local hashes numTokens tokens give: only
// full blocks (or, with eagle, full windows) count.
func BlockCount(numTokens, blockSize int, eagle bool) (int, error) {
	if blockSize <= 0 {
		return 0, fmt.Errorf("%w: block size is %d, must be at least 1", ErrInvalidArgument, blockSize)
	}
	if numTokens < 0 {
		return 0, fmt.Errorf("%w: token count is %d", ErrInvalidArgument, numTokens)
	}
	if eagle {
		if numTokens == 0 {
			return 0, nil
		}
		return (numTokens - 1) / blockSize, nil
	}
	return numTokens / blockSize, nil
}

// BlockHashes returns the local hash of every full block of tokens.
func BlockHashes(tokens []uint32, blockSize int, opts Options) ([]uint64, error) {
	return AppendBlockHashes(nil, tokens, blockSize, opts)
}

// AppendBlockHashes appends the local hash of every full block of tokens
// to dst. Without multimodal hashes it does not allocate when dst has
// room for the result. On error dst is returned unchanged.
func AppendBlockHashes(dst []uint64, tokens []uint32, blockSize int, opts Options) ([]uint64, error) {
	dst, _, err := appendHashes(dst, nil, false, tokens, blockSize, opts)
	return dst, err
}

// AppendBlockAndSequenceHashes appends the local hashes of the blocks of
// tokens to local and their sequence hashes (a chain starting at the
// first new block) to seq, in one pass. It is faster than
// AppendBlockHashes followed by AppendSequenceHashes because the chain,
// whose steps must wait for each other, overlaps with hashing the next
// block. On error local and seq are returned unchanged.
//
// local and seq may share memory (even be the same slice): the sequence
// hashes then go to a new array, as append does when out of room, so both
// results are right; the returned seq keeps seq's old elements.
func AppendBlockAndSequenceHashes(local, seq []uint64, tokens []uint32, blockSize int, opts Options) ([]uint64, []uint64, error) {
	return appendHashes(local, seq, true, tokens, blockSize, opts)
}

func appendHashes(local, seq []uint64, withSequence bool, tokens []uint32, blockSize int, opts Options) ([]uint64, []uint64, error) {
	n, err := BlockCount(len(tokens), blockSize, opts.Eagle)
	if err != nil {
		return local, seq, err
	}
	if len(opts.MMHashes) > n {
		return local, seq, fmt.Errorf("%w: multimodal hashes given for %d blocks, but the tokens make %d blocks",
			ErrInvalidArgument, len(opts.MMHashes), n)
	}
	seed := Seed(opts.LoraName, opts.CacheNamespace)
	keys := &baseKeys
	if seed != BaseSeed {
		seeded := newSeededKeys(seed)
		keys = &seeded
	}
	window := blockSize
	if opts.Eagle {
		window++
	}
	local = slices.Grow(local, n)
	l := local[len(local) : len(local)+n]
	var sq []uint64
	if withSequence {
		seq = slices.Grow(seq, n)
		if overlap(local[:len(local)+n], seq[:len(seq)+n]) {
			// The two outputs are written together, block by block (and
			// four at a time in the vector loops): they must not alias.
			seq = append(make([]uint64, 0, len(seq)+n), seq...)
		}
		sq = seq[len(seq) : len(seq)+n]
	}
	// The sequence chain runs one block behind the hashing: a chain step
	// must wait for the one before it, and issuing it after the next block
	// lets the processor overlap that wait with independent work.
	var chain uint64
	fast := false
	switch {
	case len(opts.MMHashes) > 0:
	case window == 16:
		chain, fast = hashBlocks64B(l, sq, tokens, blockSize, keys), true
	case window == 64:
		chain, fast = hashBlocks256B(l, sq, tokens, blockSize, seed)
	}
	if !fast {
		var scratch, encoded []byte
		// Windows longer than the fixed paths go straight to XXH3 over the
		// prompt's bytes, viewed (or on big-endian hosts encoded) once.
		var prompt []byte
		if window > 32 && n > 0 {
			prompt = tokenBytes(tokens[:(n-1)*blockSize+window], &encoded)
		}
		for i := range l {
			block := tokens[i*blockSize : i*blockSize+window]
			switch {
			case i < len(opts.MMHashes) && len(opts.MMHashes[i]) > 0:
				scratch = appendMultimodalBlock(scratch[:0], block, opts.MMHashes[i])
				l[i] = xxh3.HashSeed(scratch, seed)
			case prompt != nil:
				l[i] = xxh3.HashSeed(prompt[4*i*blockSize:4*(i*blockSize+window)], seed)
			default:
				l[i] = hashTokens(block, seed, keys, &scratch)
			}
			if withSequence && i > 0 {
				chain = extendChain(chain, l[i-1], i-1)
				sq[i-1] = chain
			}
		}
	}
	if withSequence && n > 0 {
		sq[n-1] = extendChain(chain, l[n-1], n-1)
		seq = seq[:len(seq)+n]
	}
	return local[:len(local)+n], seq, nil
}

// extendChain returns the sequence hash of block i from that of block i-1.
func extendChain(chain, local uint64, i int) uint64 {
	if i == 0 {
		return local
	}
	return hash16(chain, local, &baseKeys)
}

// hashTokens is XXH3-64 of the tokens as little-endian u32 bytes.
func hashTokens(block []uint32, seed uint64, keys *seededKeys, scratch *[]byte) uint64 {
	switch n := len(block); {
	case n >= 5 && n <= 32:
		return hashTokens17to128(block, keys)
	case n == 3 || n == 4:
		return hash9to16(pair(block, 0), pair(block, n-2), 4*n, keys)
	}
	return xxh3.HashSeed(tokenBytes(block, scratch), seed)
}

// hostLittleEndian selects the zero-copy byte view of tokens; a variable
// rather than a constant so tests can exercise the portable path too.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// tokenBytes returns the little-endian bytes of tokens: their own memory
// on a little-endian host, an encoded copy in scratch elsewhere.
func tokenBytes(tokens []uint32, scratch *[]byte) []byte {
	if len(tokens) == 0 {
		return nil
	}
	if hostLittleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), 4*len(tokens))
	}
	*scratch = appendTokens((*scratch)[:0], tokens)
	return *scratch
}

func appendTokens(dst []byte, tokens []uint32) []byte {
	for _, t := range tokens {
		dst = binary.LittleEndian.AppendUint32(dst, t)
	}
	return dst
}

// appendMultimodalBlock appends a multimodal block's hashed bytes: its
// tokens, then its object hashes in ascending order, each little-endian.
func appendMultimodalBlock(dst []byte, tokens []uint32, mmHashes []uint64) []byte {
	dst = appendTokens(dst, tokens)
	sorted := slices.Clone(mmHashes)
	slices.Sort(sorted)
	for _, h := range sorted {
		dst = binary.LittleEndian.AppendUint64(dst, h)
	}
	return dst
}

// overlap reports whether a and b share any element's memory.
func overlap(a, b []uint64) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	const size = unsafe.Sizeof(uint64(0))
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b))*size && pb < pa+uintptr(len(a))*size
}
