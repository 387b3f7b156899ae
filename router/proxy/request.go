package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// clientRequest is what the proxy needs of a completion request to route
// it; the body itself is forwarded unchanged.
type clientRequest struct {
	Model     string
	Stream    bool
	CacheSalt string
	// TokenIDs is the prompt when the client gave token ids; otherwise
	// Tokenize is the /tokenize body that yields them.
	TokenIDs []uint32
	Tokenize []byte
}

// completionFields are the fields of POST /v1/completions and
// /v1/chat/completions the proxy reads; every other field is the
// engine's business and is left alone.
type completionFields struct {
	Model                string          `json:"model"`
	Prompt               json.RawMessage `json:"prompt"`
	Messages             json.RawMessage `json:"messages"`
	Stream               bool            `json:"stream"`
	CacheSalt            string          `json:"cache_salt"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage *bool           `json:"continue_final_message"`
}

// tokenizeBody is vLLM's POST /tokenize request, both shapes.
type tokenizeBody struct {
	Model                string          `json:"model"`
	Prompt               *string         `json:"prompt,omitempty"`
	Messages             json.RawMessage `json:"messages,omitempty"`
	AddSpecialTokens     *bool           `json:"add_special_tokens,omitempty"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt,omitempty"`
	ContinueFinalMessage *bool           `json:"continue_final_message,omitempty"`
}

// parseCompletion reads a /v1/completions body (chat false) or a
// /v1/chat/completions body (chat true).
func parseCompletion(body []byte, chat bool) (clientRequest, error) {
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
		if isNull(f.Messages) {
			return clientRequest{}, badRequest("missing_field", "missing required field messages")
		}
		tb.Messages = f.Messages
		tb.AddGenerationPrompt, tb.ContinueFinalMessage = f.AddGenerationPrompt, f.ContinueFinalMessage
	} else {
		if isNull(f.Prompt) {
			return clientRequest{}, badRequest("missing_field", "missing required field prompt")
		}
		switch p := bytes.TrimSpace(f.Prompt); p[0] {
		case '[':
			ids, err := tokenIDs(p)
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

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// tokenIDs reads a prompt given as a list of token ids. A batch (a list
// of prompts) is refused: one request goes to one engine.
func tokenIDs(raw []byte) ([]uint32, error) {
	if ids, ok := fastTokenIDs(raw); ok {
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

// fastTokenIDs parses the common shape, [1, 2, 3] with plain decimal
// integers, without encoding/json's reflection (a long prompt is most of
// the proxy's work otherwise). Anything else reports !ok and takes the
// general path, which also words the errors.
func fastTokenIDs(raw []byte) ([]uint32, bool) {
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
