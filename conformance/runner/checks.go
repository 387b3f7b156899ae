package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// check is one case: requests whose answers must all match. Want holds the
// expected answers (from a vector, or from the reference testee).
type check struct {
	Name string
	Reqs []protocol.Request
	Want []answer
	// Optional is an op the testee may lack (raw_hash): then the case is
	// "n/a" for it, never "passed".
	Optional string
}

// resultField is the answer field that carries an op's result.
var resultField = map[string]string{
	protocol.OpBlockHashes:    "block_hashes",
	protocol.OpSequenceHashes: "sequence_hashes",
	protocol.OpSeed:           "seed",
	protocol.OpChainStep:      "hash",
	protocol.OpRawHash:        "hash",
}

// errorAnswer is the expected answer of an input the binding must reject;
// the reason id is for humans only (bindings word errors their own way).
func errorAnswer(reason string) answer {
	data, _ := json.Marshal(reason)
	return answer{"error": data}
}

func resultAnswer(op string, v any) answer {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode expected %s: %v", op, err))
	}
	return answer{resultField[op]: data}
}

// compareAnswer returns "" when got matches want for op, else why not. An
// expected error matches any error answer without a result; an expected
// result must be there, well-formed (u64 as decimal strings) and equal.
func compareAnswer(op string, want, got answer) string {
	field := resultField[op]
	if _, wantErr := want["error"]; wantErr {
		if _, gotErr := got["error"]; !gotErr {
			return fmt.Sprintf("expected an error (%s), got %s", want["error"], show(got))
		}
		if _, leaked := got[field]; leaked {
			return fmt.Sprintf("expected an error without a result, got %s", show(got))
		}
		return ""
	}
	if msg, gotErr := got["error"]; gotErr {
		return fmt.Sprintf("unexpected error %s", msg)
	}
	raw, ok := got[field]
	if !ok {
		return fmt.Sprintf("answer has no %q: %s", field, show(got))
	}
	switch op {
	case protocol.OpBlockHashes, protocol.OpSequenceHashes:
		var w, g []protocol.U64
		if err := json.Unmarshal(want[field], &w); err != nil {
			return fmt.Sprintf("expected %s unreadable: %v", field, err)
		}
		if err := json.Unmarshal(raw, &g); err != nil || g == nil {
			return fmt.Sprintf("%s must be an array of u64 decimal strings, got %.300s", field, raw)
		}
		return diffU64s(field, w, g)
	default:
		var w, g protocol.U64
		if err := json.Unmarshal(want[field], &w); err != nil {
			return fmt.Sprintf("expected %s unreadable: %v", field, err)
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			return fmt.Sprintf("%s must be a u64 decimal string, got %.100s", field, raw)
		}
		if w != g {
			return fmt.Sprintf("%s: expected %d, got %d", field, w, g)
		}
	}
	return ""
}

func diffU64s(field string, want, got []protocol.U64) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%s: expected %d values, got %d", field, len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			return fmt.Sprintf("%s[%d]: expected %d, got %d (first of the differences)", field, i, want[i], got[i])
		}
	}
	return ""
}

// show prints an answer compactly for a report, without its id.
func show(a answer) string {
	c := make(answer, len(a))
	for k, v := range a {
		if k != "id" {
			c[k] = v
		}
	}
	data, _ := json.Marshal(c)
	if len(data) > 400 {
		return string(data[:400]) + "..."
	}
	return string(data)
}

// showRequest prints a request as it went on the wire, without its id.
func showRequest(r protocol.Request) string {
	r.ID = 0
	data, _ := json.Marshal(r)
	data = bytes.Replace(data, []byte(`{"id":0,`), []byte(`{`), 1)
	return string(data)
}
