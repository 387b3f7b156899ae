package main

import (
	"errors"
	"strings"

	"github.com/kvhash/kvhash/bindings/go/wasmhost"
	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// NewIndex returns a fresh index in the module.
func (b binding) NewIndex(mode string) (protocol.Index, error) {
	m, err := protocol.CoreMode(mode)
	if err != nil {
		return nil, err
	}
	x, err := b.m.NewIndex(m)
	if err != nil {
		return nil, err
	}
	return index{x: x}, nil
}

// ErrorKind classifies wasmhost's errors (which carry the ABI status).
func (b binding) ErrorKind(err error) string {
	var e *wasmhost.Error
	if !errors.As(err, &e) {
		return protocol.KindInternal
	}
	switch e.Status {
	case wasmhost.StatusDecode:
		return protocol.KindDecode
	case wasmhost.StatusRejected:
		return protocol.KindRejected
	case wasmhost.StatusInvalidArgument:
		return protocol.KindInvalidArgument
	}
	return protocol.KindInternal
}

type index struct{ x *wasmhost.Index }

func (ix index) ApplyJSON(workerID uint64, event []byte) error {
	return ix.x.ApplyJSON(workerID, event)
}

func (ix index) FindMatches(localHashes []uint64, earlyExit bool) ([]protocol.Match, error) {
	matches, err := ix.x.AppendMatches(nil, localHashes, earlyExit)
	if err != nil {
		return nil, err
	}
	return protocol.FromCoreMatches(matches), nil
}

func (ix index) RemoveWorker(workerID uint64) error   { return ix.x.RemoveWorker(workerID) }
func (ix index) ClearAllBlocks(workerID uint64) error { return ix.x.ClearAllBlocks(workerID) }
func (ix index) StatsJSON() ([]byte, error)           { return ix.x.StatsJSON() }
func (ix index) Close() error                         { return ix.x.Free() }

// Dump splits the module's JSON lines; the texts are passed through.
func (ix index) Dump() ([]string, error) {
	data, err := ix.x.DumpJSONL()
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), nil
}
