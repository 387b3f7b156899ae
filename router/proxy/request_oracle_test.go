package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// oracleParseCompletion is parseCompletion as it was before the one-pass
// reader (encoding/json over the whole body, the prompt kept as a
// json.RawMessage and read again): the reference the differential fuzz
// target and the benchmarks hold the new reader to. Frozen; do not edit.
func oracleParseCompletion(body []byte, chat bool) (clientRequest, error) {
	var f completionFields
	if err := json.Unmarshal(body, &f); err != nil {
		return clientRequest{}, badRequest("invalid_json", "invalid JSON body: %v", err)
	}
	if f.Model == "" {
		return clientRequest{}, badRequest("missing_field", "missing required field model")
	}
	req := clientRequest{Model: f.Model, Stream: f.Stream, CacheSalt: f.CacheSalt}
	tb := tokenizeBody{Model: f.Model, AddSpecialTokens: f.AddSpecialTokens}
	if chat {
		if oracleIsNull(f.Messages) {
			return clientRequest{}, badRequest("missing_field", "missing required field messages")
		}
		tb.Messages = f.Messages
		tb.AddGenerationPrompt, tb.ContinueFinalMessage = f.AddGenerationPrompt, f.ContinueFinalMessage
	} else {
		if oracleIsNull(f.Prompt) {
			return clientRequest{}, badRequest("missing_field", "missing required field prompt")
		}
		switch p := bytes.TrimSpace(f.Prompt); p[0] {
		case '[':
			ids, err := oracleTokenIDs(p)
			if err != nil {
				return clientRequest{}, err
			}
			req.TokenIDs = ids
			return req, nil
		case '"':
			var s string
			if err := json.Unmarshal(p, &s); err != nil {
				return clientRequest{}, badRequest("invalid_value", "field prompt: %v", err)
			}
			tb.Prompt = &s
		default:
			return clientRequest{}, badRequest("invalid_value", "field prompt: want a string or a list of token ids")
		}
	}
	b, err := json.Marshal(tb)
	if err != nil {
		return clientRequest{}, fmt.Errorf("encoding the tokenize request: %w", err)
	}
	req.Tokenize = b
	return req, nil
}

func oracleIsNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func oracleTokenIDs(raw []byte) ([]uint32, error) {
	if ids, ok := oracleFastTokenIDs(raw); ok {
		return ids, nil
	}
	var nums []json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&nums); err != nil {
		return nil, badRequest("invalid_value", "field prompt: want a string or one list of token ids (batches are not proxied): %v", err)
	}
	ids := make([]uint32, len(nums))
	for i, n := range nums {
		v, err := n.Int64()
		if err != nil || v < 0 || v > math.MaxUint32 {
			return nil, badRequest("invalid_value", "field prompt: token %d is %s; want an integer 0..4294967295", i, n)
		}
		ids[i] = uint32(v)
	}
	return ids, nil
}

func oracleFastTokenIDs(raw []byte) ([]uint32, bool) {
	i, n := 0, len(raw)
	skip := func() {
		for i < n && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\t' || raw[i] == '\r') {
			i++
		}
	}
	skip()
	if i >= n || raw[i] != '[' {
		return nil, false
	}
	i++
	ids := make([]uint32, 0, n/6)
	skip()
	if i < n && raw[i] == ']' {
		i++
		skip()
		return ids, i == n
	}
	for {
		skip()
		start := i
		var v uint64
		for i < n && raw[i] >= '0' && raw[i] <= '9' {
			v = v*10 + uint64(raw[i]-'0')
			if v > math.MaxUint32 || i-start > 10 {
				return nil, false
			}
			i++
		}
		if i == start || (raw[start] == '0' && i-start > 1) {
			return nil, false
		}
		ids = append(ids, uint32(v))
		skip()
		if i >= n {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i++
		case ']':
			i++
			skip()
			return ids, i == n
		default:
			return nil, false
		}
	}
}

// oracleTokenizeAnswer is the /tokenize answer's reading before the
// one-pass reader. Frozen; do not edit.
func oracleTokenizeAnswer(b []byte) ([]uint32, bool) {
	var tr tokenizeResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.Tokens == nil {
		return nil, false
	}
	return tr.Tokens, true
}
