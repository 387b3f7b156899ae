package protocol

import (
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// The Go testees' bindings (core itself, and the module through wasmhost)
// take and return core's index types, so their translation to and from the
// protocol is written once, here.

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
