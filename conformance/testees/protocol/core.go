package protocol

import (
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// The Go testees' bindings (core itself, and the module through wasmhost)
// take and return core's index types, so their translation to and from the
// protocol is written once, here.

// AllOps lists every operation, for testees that serve them all.
var AllOps = []string{OpHello, OpBlockHashes, OpSequenceHashes, OpSeed, OpChainStep, OpRawHash, OpIndex}

// CoreOptions is the core.Options of a block_hashes request (null
// names are absent, null multimodal entries mean no media).
func (o Options) CoreOptions() core.Options {
	mm := make([][]uint64, len(o.MMHashes))
	for i, entry := range o.MMHashes {
		if entry != nil {
			mm[i] = U64s(entry)
		}
	}
	return core.Options{LoraName: o.Lora(), CacheNamespace: o.Namespace(), Eagle: o.Eagle, MMHashes: mm}
}

// CoreMode is the core.Mode of an index request's mode.
func CoreMode(mode string) (core.Mode, error) {
	switch mode {
	case ModeWarn:
		return core.ModeWarn, nil
	case ModeEnforce:
		return core.ModeEnforce, nil
	}
	return 0, fmt.Errorf("%w: mode %q: want %q or %q", core.ErrInvalidArgument, mode, ModeWarn, ModeEnforce)
}

// FromCoreMatches is the find_matches answer for core's matches.
func FromCoreMatches(matches []core.Match) []Match {
	out := make([]Match, len(matches))
	for i, m := range matches {
		out[i] = Match{WorkerID: U64(m.Worker.ID), DPRank: m.Worker.DPRank,
			Score: m.Score, TreeSize: U64(m.TreeSize)}
	}
	return out
}
