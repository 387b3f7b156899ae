package wasmhost

import (
	"encoding/json"
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// statsJSON mirrors the stats JSON of core.Stats.MarshalJSON. Violation
// counts are keyed by core.Violation.String, so the names come from core.
type statsJSON struct {
	Mode       string            `json:"mode"`
	Nodes      uint64            `json:"nodes"`
	Violations map[string]uint64 `json:"violations"`
	Workers    []struct {
		WorkerID   uint64            `json:"worker_id"`
		DPRank     uint32            `json:"dp_rank"`
		Blocks     uint64            `json:"blocks"`
		Unstable   bool              `json:"unstable"`
		Violations map[string]uint64 `json:"violations"`
	} `json:"workers"`
}

// decodeStats turns the module's stats JSON back into core.Stats.
func decodeStats(data []byte) (core.Stats, error) {
	var raw statsJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return core.Stats{}, fmt.Errorf("kvhash_index_stats_json: %w", err)
	}
	mode, err := parseMode(raw.Mode)
	if err != nil {
		return core.Stats{}, err
	}
	s := core.Stats{Mode: mode, Nodes: raw.Nodes, Workers: make([]core.WorkerStats, len(raw.Workers))}
	if err := violationCounts(&s.Violations, raw.Violations); err != nil {
		return core.Stats{}, err
	}
	for i, w := range raw.Workers {
		ws := &s.Workers[i]
		ws.Worker = core.Worker{ID: w.WorkerID, DPRank: w.DPRank}
		ws.Blocks, ws.Unstable = w.Blocks, w.Unstable
		if err := violationCounts(&ws.Violations, w.Violations); err != nil {
			return core.Stats{}, err
		}
	}
	return s, nil
}

func parseMode(name string) (core.Mode, error) {
	for _, m := range []core.Mode{core.ModeFromEnvironment, core.ModeWarn, core.ModeEnforce} {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("kvhash_index_stats_json: unknown mode %q", name)
}

func violationCounts(dst *[core.NumViolations]uint64, counts map[string]uint64) error {
	for name, n := range counts {
		found := false
		for k := range core.NumViolations {
			if k.String() == name {
				dst[k], found = n, true
				break
			}
		}
		if !found {
			return fmt.Errorf("kvhash_index_stats_json: unknown violation %q", name)
		}
	}
	return nil
}
