package main

import (
	"errors"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
	"github.com/kvhash/kvhash/core"
)

// NewIndex returns a fresh core.Index in the requested mode.
func (b binding) NewIndex(mode string) (protocol.Index, error) {
	m, err := protocol.CoreMode(mode)
	if err != nil {
		return nil, err
	}
	return index{x: core.NewIndex(core.IndexOptions{Mode: m}), breakMode: b.breakMode}, nil
}

// ErrorKind classifies core's errors the way the ABI's status codes do:
// every stability violation returned as an error is a rejection.
func (b binding) ErrorKind(err error) string {
	switch {
	case errors.Is(err, core.ErrDecode):
		return protocol.KindDecode
	case errors.Is(err, core.ErrStability), errors.Is(err, core.ErrEventRejected):
		return protocol.KindRejected
	case errors.Is(err, core.ErrInvalidArgument):
		return protocol.KindInvalidArgument
	}
	return protocol.KindInternal
}

type index struct {
	x         *core.Index
	breakMode string
}

func (ix index) ApplyJSON(workerID uint64, event []byte) error {
	ev, err := core.DecodeEvent(event)
	if err != nil {
		return err
	}
	return ix.x.Apply(workerID, ev)
}

func (ix index) FindMatches(localHashes []uint64, earlyExit bool) ([]protocol.Match, error) {
	out := protocol.FromCoreMatches(ix.x.AppendMatches(nil, localHashes, earlyExit))
	if ix.breakMode == "index" {
		for i := range out {
			out[i].TreeSize++
		}
	}
	return out, nil
}

func (ix index) RemoveWorker(workerID uint64) error {
	ix.x.RemoveWorker(workerID)
	return nil
}

func (ix index) ClearAllBlocks(workerID uint64) error {
	ix.x.ClearAllBlocks(workerID)
	return nil
}

func (ix index) StatsJSON() ([]byte, error) {
	return ix.x.Stats().MarshalJSON()
}

func (ix index) Dump() ([]string, error) {
	var out []string
	for _, ev := range ix.x.Dump() {
		data, err := ev.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, string(data))
	}
	return out, nil
}

func (ix index) Close() error { return nil }
