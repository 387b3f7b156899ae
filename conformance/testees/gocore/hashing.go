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
	return protocol.Hello{Binding: "go", LibraryVersion: core.Version,
		SpecVersion: core.SpecVersion, Ops: protocol.AllOps}
}

func (b binding) BlockHashes(tokens []uint32, blockSize int64, opts protocol.Options) ([]uint64, error) {
	o := opts.CoreOptions()
	if b.breakMode == "lora" && o.LoraName != "" {
		o.LoraName += "x"
	}
	return core.BlockHashes(tokens, int(blockSize), o)
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
