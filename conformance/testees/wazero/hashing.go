package main

import (
	"fmt"

	"github.com/kvhash/kvhash/bindings/go/wasmhost"
	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// binding adapts a wasmhost.Module to the testee protocol.
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
	return protocol.Hello{Binding: "wazero", LibraryVersion: b.version, SpecVersion: b.spec, Ops: protocol.AllOps}
}

func (b binding) BlockHashes(tokens []uint32, blockSize int64, opts protocol.Options) ([]uint64, error) {
	return b.m.BlockHashes(tokens, int(blockSize), opts.CoreOptions())
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
