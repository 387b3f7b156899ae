package core

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// WorkerStats describes one known worker (rank).
type WorkerStats struct {
	Worker     Worker
	Blocks     uint64 // blocks it holds, named or not (its tree size)
	Unstable   bool   // an enforced violation since it was last cleared
	Violations [NumViolations]uint64
}

// Stats is a snapshot of the index: its mode, size, and violation counts
// per kind, in total (including workers since removed) and per worker.
type Stats struct {
	Mode       Mode
	Nodes      uint64
	Workers    []WorkerStats // sorted by Worker
	Violations [NumViolations]uint64
}

// MarshalJSON writes the stats JSON every binding passes through:
//
//	{"mode":"warn","nodes":3,"violations":{"parent_not_found":0,...},
//	 "workers":[{"worker_id":7,"dp_rank":0,"blocks":3,"unstable":false,"violations":{...}}]}
//
// Counts are JSON integers; violation keys are Violation.String in kind order.
func (s Stats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160+200*len(s.Workers))
	b = append(b, `{"mode":"`...)
	b = append(b, s.Mode.String()...)
	b = append(b, `","nodes":`...)
	b = strconv.AppendUint(b, s.Nodes, 10)
	b = append(b, `,"violations":`...)
	b = appendViolations(b, &s.Violations)
	b = append(b, `,"workers":[`...)
	for i := range s.Workers {
		w := &s.Workers[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"worker_id":`...)
		b = strconv.AppendUint(b, w.Worker.ID, 10)
		b = append(b, `,"dp_rank":`...)
		b = strconv.AppendUint(b, uint64(w.Worker.DPRank), 10)
		b = append(b, `,"blocks":`...)
		b = strconv.AppendUint(b, w.Blocks, 10)
		b = append(b, `,"unstable":`...)
		b = strconv.AppendBool(b, w.Unstable)
		b = append(b, `,"violations":`...)
		b = appendViolations(b, &w.Violations)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func appendViolations(b []byte, counts *[NumViolations]uint64) []byte {
	b = append(b, '{')
	for k := range NumViolations {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k.String()...)
		b = append(b, `":`...)
		b = strconv.AppendUint(b, counts[k], 10)
	}
	return append(b, '}')
}

// UnmarshalJSON reads the stats JSON MarshalJSON writes, so that a host
// holding only the JSON (a WASM or C caller's answer) gets Stats back
// without restating the schema. Unknown modes and violation kinds are
// errors: they mean a library newer than this reader.
func (s *Stats) UnmarshalJSON(data []byte) error {
	var raw struct {
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
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("%w: stats: %v", ErrDecode, err)
	}
	mode, err := parseMode(raw.Mode)
	if err != nil {
		return err
	}
	out := Stats{Mode: mode, Nodes: raw.Nodes, Workers: make([]WorkerStats, len(raw.Workers))}
	if err := readViolations(&out.Violations, raw.Violations); err != nil {
		return err
	}
	for i, w := range raw.Workers {
		ws := &out.Workers[i]
		ws.Worker = Worker{ID: w.WorkerID, DPRank: w.DPRank}
		ws.Blocks, ws.Unstable = w.Blocks, w.Unstable
		if err := readViolations(&ws.Violations, w.Violations); err != nil {
			return err
		}
	}
	*s = out
	return nil
}

func parseMode(name string) (Mode, error) {
	for m := ModeFromEnvironment; m.Valid(); m++ {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: stats: unknown mode %q", ErrDecode, name)
}

func readViolations(dst *[NumViolations]uint64, counts map[string]uint64) error {
	for name, n := range counts {
		k := Violation(0)
		for k < NumViolations && k.String() != name {
			k++
		}
		if k == NumViolations {
			return fmt.Errorf("%w: stats: unknown violation %q", ErrDecode, name)
		}
		dst[k] = n
	}
	return nil
}
