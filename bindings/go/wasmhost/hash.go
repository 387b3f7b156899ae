package wasmhost

import (
	"github.com/kvhash/kvhash/core"
)

// BlockHashes returns the local hash of every full block of tokens, as
// core.BlockHashes does, computed by the module.
func (m *Module) BlockHashes(tokens []uint32, blockSize int, opts core.Options) ([]uint64, error) {
	return m.AppendBlockHashes(nil, tokens, blockSize, opts)
}

// AppendBlockHashes appends the local hash of every full block of tokens
// to dst. On error dst is returned unchanged.
func (m *Module) AppendBlockHashes(dst []uint64, tokens []uint32, blockSize int, opts core.Options) ([]uint64, error) {
	out := dst
	err := m.withInstance(func(in *instance) error {
		var err error
		out, err = in.blockHashes(dst, tokens, blockSize, opts)
		return err
	})
	if err != nil {
		return dst, err
	}
	return out, nil
}

// BlockAndSequenceHashes returns the local hash of every full block of
// tokens and their sequence hashes, as core.AppendBlockAndSequenceHashes
// does, computed by the module in one call.
func (m *Module) BlockAndSequenceHashes(tokens []uint32, blockSize int, opts core.Options) ([]uint64, []uint64, error) {
	return m.AppendBlockAndSequenceHashes(nil, nil, tokens, blockSize, opts)
}

// AppendBlockAndSequenceHashes appends the local hashes of the blocks of
// tokens to local and their sequence hashes (a chain starting at the
// first new block) to seq. It crosses into the module once, where
// AppendBlockHashes followed by AppendSequenceHashes crosses twice and
// copies the local hashes back in, and the module computes both in one
// pass: use it when you need both. On error local and seq are returned
// unchanged.
func (m *Module) AppendBlockAndSequenceHashes(local, seq []uint64, tokens []uint32, blockSize int, opts core.Options) ([]uint64, []uint64, error) {
	outLocal, outSeq := local, seq
	err := m.withInstance(func(in *instance) error {
		var err error
		outLocal, outSeq, err = in.blockAndSequenceHashes(local, seq, tokens, blockSize, opts)
		return err
	})
	if err != nil {
		return local, seq, err
	}
	return outLocal, outSeq, nil
}

// SequenceHashes returns the sequence hash chain over blockHashes.
func (m *Module) SequenceHashes(blockHashes []uint64) ([]uint64, error) {
	return m.AppendSequenceHashes(make([]uint64, 0, len(blockHashes)), blockHashes)
}

// AppendSequenceHashes appends the sequence hashes of blockHashes to dst.
// On error dst is returned unchanged.
func (m *Module) AppendSequenceHashes(dst, blockHashes []uint64) ([]uint64, error) {
	out := dst
	err := m.withInstance(func(in *instance) error {
		var err error
		out, err = in.sequenceHashes(dst, blockHashes)
		return err
	})
	if err != nil {
		return dst, err
	}
	return out, nil
}

// Seed returns the seed of local block hashes for a LoRA name and a cache
// namespace ("" means absent).
func (m *Module) Seed(loraName, cacheNamespace string) (uint64, error) {
	var seed uint64
	err := m.withInstance(func(in *instance) error {
		var err error
		seed, err = in.seed(loraName, cacheNamespace)
		return err
	})
	return seed, err
}

// ChainStep returns the sequence hash of a block from its parent's
// sequence hash and its own local hash.
func (m *Module) ChainStep(parentSequenceHash, localHash uint64) (uint64, error) {
	var h uint64
	err := m.withInstance(func(in *instance) error {
		var err error
		h, err = in.call(in.fn.chainStep, parentSequenceHash, localHash)
		return err
	})
	return h, err
}

// RawHash returns XXH3-64 with the spec's seed over data, for checking a
// build against the raw-bytes vectors.
func (m *Module) RawHash(data []byte) (uint64, error) {
	var h uint64
	err := m.withInstance(func(in *instance) error {
		var err error
		h, err = in.rawHash(data)
		return err
	})
	return h, err
}

// BlockCount returns how many local hashes numTokens tokens give.
func (m *Module) BlockCount(numTokens, blockSize int, eagle bool) (int, error) {
	var n int
	err := m.withInstance(func(in *instance) error {
		var err error
		n, err = in.blockCount(numTokens, blockSize, eagle)
		return err
	})
	return n, err
}

// Version returns the module's implementation version (core.Version of
// the code it was built from).
func (m *Module) Version() (string, error) {
	var v string
	err := m.withInstance(func(in *instance) error {
		var err error
		v, err = in.text(in.fn.version)
		return err
	})
	return v, err
}

// SpecVersion returns the hashing spec version the module implements.
func (m *Module) SpecVersion() (string, error) {
	var v string
	err := m.withInstance(func(in *instance) error {
		var err error
		v, err = in.text(in.fn.specVersion)
		return err
	})
	return v, err
}
