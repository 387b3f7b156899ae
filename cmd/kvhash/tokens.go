package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
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

// readTokens reads tokens from r: a JSON array when the input starts with
// '[', otherwise whitespace-separated integers.
func readTokens(r io.Reader) ([]uint32, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		return parseJSONTokens(trimmed)
	}
	var tokens []uint32
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Split(bufio.ScanWords)
	for i := 0; sc.Scan(); i++ {
		t, err := parseToken(sc.Text())
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

// parseToken accepts a decimal integer from 0 to 2^32-1.
func parseToken(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err == nil {
		return uint32(v), nil
	}
	switch {
	case strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("%q is negative; tokens are integers from 0 to %d", s, uint32(math.MaxUint32))
	case strings.Contains(err.Error(), strconv.ErrRange.Error()):
		return 0, fmt.Errorf("%q is above %d, the largest token id", s, uint32(math.MaxUint32))
	}
	return 0, fmt.Errorf("%q is not an integer", s)
}
