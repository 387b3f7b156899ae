package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// parseTokenArgs reads tokens given as command-line arguments.
func parseTokenArgs(args []string) ([]uint32, error) {
	tokens := make([]uint32, 0, len(args))
	for i, a := range args {
		t, err := parseToken(a)
		if err != nil {
			return nil, usagef("token %d: %v", i, err)
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// utf8BOM is what some editors and Windows tools put before a text file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readTokens reads tokens from r, all of it and with no limit on the
// length of a line or word: a JSON array when the input starts with '['
// (after an optional UTF-8 byte order mark and spaces), otherwise
// whitespace-separated integers. A read error is returned, never taken
// for the end of the input.
func readTokens(r io.Reader) ([]uint32, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		return parseJSONTokens(trimmed)
	}
	words := bytes.Fields(data)
	tokens := make([]uint32, 0, len(words))
	for i, w := range words {
		t, err := parseToken(string(w))
		if err != nil {
			return nil, usagef("token %d: %v", i, err)
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

func parseJSONTokens(data []byte) ([]uint32, error) {
	// Raw elements, not json.Number: the latter also accepts quoted
	// numbers, and a token list with strings in it is a caller's bug.
	var raw []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, usagef("standard input is not a JSON array of integers: %v", err)
	}
	if dec.More() {
		return nil, usagef("standard input has data after the JSON array")
	}
	tokens := make([]uint32, len(raw))
	for i, n := range raw {
		t, err := parseToken(string(bytes.TrimSpace(n)))
		if err != nil {
			return nil, usagef("token %d: %v", i, err)
		}
		tokens[i] = t
	}
	return tokens, nil
}

// parseToken accepts a plain decimal integer from 0 to 2^32-1.
func parseToken(s string) (uint32, error) {
	v, err := parseDecimal(s, math.MaxUint32)
	if err == nil {
		return uint32(v), nil
	}
	shown := quoteShort(s)
	for _, c := range []byte(s) {
		if c == ',' {
			return 0, fmt.Errorf("%s is not an integer: separate tokens with spaces, or give a JSON array", shown)
		}
	}
	switch {
	case s != "" && s[0] == '-' && isDigits(s[1:]):
		return 0, fmt.Errorf("%s is negative; tokens are integers from 0 to %d", shown, uint32(math.MaxUint32))
	case len(s) > 1 && s[0] == '0' && isDigits(s):
		return 0, fmt.Errorf("%s has a leading zero; tokens are plain decimal", shown)
	case isDigits(s):
		return 0, fmt.Errorf("%s is above %d, the largest token id", shown, uint32(math.MaxUint32))
	}
	return 0, fmt.Errorf("%s is not an integer", shown)
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// quoteShort quotes s, cut to a readable length: one bad word can be a
// whole megabyte of comma-separated tokens.
func quoteShort(s string) string {
	const limit = 40
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:limit], len(s))
}
