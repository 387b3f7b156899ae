package main

import (
	"fmt"

	"github.com/kvhash/kvhash/bindings/go/wasmhost"
	"github.com/kvhash/kvhash/conformance/testees/protocol"
	"github.com/kvhash/kvhash/core"
)

// binding adapts a wasmhost.Module to the testee protocol. The module has
// no raw-bytes export, so raw_hash is not served.
type binding struct {
	m             *wasmhost.Module
	version, spec string
}

func newBinding(m *wasmhost.Module) (binding, error) {
	version, err := m.Version()
	if err != nil {
		return binding{}, fmt.Errorf("kvhash_version: %w", err)
	}
	spec, err := m.SpecVersion()
	if err != nil {
		return binding{}, fmt.Errorf("kvhash_spec_version: %w", err)
	}
	return binding{m: m, version: version, spec: spec}, nil
}

func (b binding) Hello() protocol.Hello {
	ops := []string{protocol.OpHello, protocol.OpBlockHashes, protocol.OpSequenceHashes,
		protocol.OpSeed, protocol.OpChainStep, protocol.OpRawHash}
	if hasIndex {
		ops = append(ops, protocol.OpIndex)
	}
	return protocol.Hello{Binding: "wazero", LibraryVersion: b.version, SpecVersion: b.spec, Ops: ops}
}

func (b binding) BlockHashes(tokens []uint32, blockSize int64, opts protocol.Options) ([]uint64, error) {
	mm := make([][]uint64, len(opts.MMHashes))
	for i, entry := range opts.MMHashes {
		if entry != nil {
			mm[i] = protocol.U64s(entry)
		}
	}
	return b.m.BlockHashes(tokens, int(blockSize), core.Options{
		LoraName: opts.Lora(), CacheNamespace: opts.Namespace(), Eagle: opts.Eagle, MMHashes: mm,
	})
}

func (b binding) SequenceHashes(blockHashes []uint64) ([]uint64, error) {
	return b.m.SequenceHashes(blockHashes)
}

func (b binding) Seed(loraName, cacheNamespace string) (uint64, error) {
	return b.m.Seed(loraName, cacheNamespace)
}

func (b binding) RawHash(data []byte) (uint64, error) {
	return b.m.RawHash(data)
}

func (b binding) ChainStep(parent, local uint64) (uint64, error) {
	return b.m.ChainStep(parent, local)
}
