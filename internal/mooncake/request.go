// Package mooncake reads and writes request traces in the Mooncake format:
// one JSON object a line, {"timestamp","input_length","output_length",
// "hash_ids"}, where each hash id stands for a block of 512 prompt tokens
// and requests that share a prefix share its leading hash ids.
//
// The core index benchmarks (core/internal/indexbench), kvrouter's demo
// (router/demo) and its simulator (router/sim) replay the same traces;
// this is their one reader, so a line one accepts the others accept too.
// Generate makes traces of the same format for tests and benchmarks.
package mooncake

import "fmt"

// BlockTokens is the number of prompt tokens one hash id stands for.
const BlockTokens = 512

// Timestamp is the type a caller reads arrival times as: whole
// milliseconds (int64), or float64 where a trace may give fractions.
type Timestamp interface{ ~int64 | ~float64 }

// Request is one line of a trace.
type Request[T Timestamp] struct {
	// Timestamp: arrival, milliseconds after the first request.
	Timestamp    T        `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// Validate reports whether q is a request the format allows: its input
// length fits its hash ids (more than 512*(n-1) and at most 512*n
// tokens), and no length or time is negative.
func (q Request[T]) Validate() error {
	n := len(q.HashIDs)
	switch {
	case n == 0:
		return fmt.Errorf("input_length %d does not fit 0 hash ids: no hash_ids", q.InputLength)
	case q.InputLength <= BlockTokens*(n-1) || q.InputLength > BlockTokens*n:
		return fmt.Errorf("input_length %d does not fit %d hash ids of %d tokens", q.InputLength, n, BlockTokens)
	case q.OutputLength < 0 || q.Timestamp < 0:
		return fmt.Errorf("negative output_length %d or timestamp %v", q.OutputLength, q.Timestamp)
	}
	return nil
}
