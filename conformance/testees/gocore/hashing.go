package main

import (
	"github.com/kvhash/kvhash/conformance/testees/protocol"
	"github.com/kvhash/kvhash/core"
)

// binding adapts package core to the testee protocol.
type binding struct {
	breakMode string // "" in real use; see the package comment
}

func (b binding) Hello() protocol.Hello {
	ops := []string{protocol.OpHello, protocol.OpBlockHashes, protocol.OpSequenceHashes,
		protocol.OpSeed, protocol.OpChainStep, protocol.OpRawHash}
	if hasIndex {
		ops = append(ops, protocol.OpIndex)
	}
	return protocol.Hello{Binding: "go", LibraryVersion: core.Version,
		SpecVersion: core.SpecVersion, Ops: ops}
}

func (b binding) BlockHashes(tokens []uint32, blockSize int64, opts protocol.Options) ([]uint64, error) {
	lora := opts.Lora()
	if b.breakMode == "lora" && lora != "" {
		lora += "x"
	}
	mm := make([][]uint64, len(opts.MMHashes))
	for i, entry := range opts.MMHashes {
		if entry != nil {
			mm[i] = protocol.U64s(entry)
		}
	}
	return core.BlockHashes(tokens, int(blockSize), core.Options{
		LoraName: lora, CacheNamespace: opts.Namespace(), Eagle: opts.Eagle, MMHashes: mm,
	})
}

func (b binding) SequenceHashes(blockHashes []uint64) ([]uint64, error) {
	return core.SequenceHashes(blockHashes), nil
}

func (b binding) Seed(loraName, cacheNamespace string) (uint64, error) {
	seed := core.Seed(loraName, cacheNamespace)
	if b.breakMode == "seed" {
		seed++
	}
	return seed, nil
}

func (b binding) ChainStep(parent, local uint64) (uint64, error) {
	return core.ChainStep(parent, local), nil
}

func (b binding) RawHash(data []byte) (uint64, error) {
	return core.RawHash(data), nil
}
