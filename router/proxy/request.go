package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/kvhash/kvhash/router/internal/jsonscan"
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
// /v1/chat/completions body (chat true): in one pass when it has the
// common shape (readCompletion), else with encoding/json, which also
// words the errors.
func parseCompletion(body []byte, chat bool) (clientRequest, error) {
	if req, ok := readCompletion(body, chat); ok {
		return req, nil
	}
	return decodeCompletion(body, chat)
}

// decodeCompletion is parseCompletion with encoding/json: every body
// readCompletion leaves (an error, a batch, escapes in keys, ...).
func decodeCompletion(body []byte, chat bool) (clientRequest, error) {
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

// tokenIDs reads a prompt given as a list of token ids (raw without
// surrounding space). A batch (a list of prompts) is refused: one
// request goes to one engine.
func tokenIDs(raw []byte) ([]uint32, error) {
	if ids, end, ok := jsonscan.Uint32s(nil, raw, 0); ok && end == len(raw) {
		return ids, nil
	}
	// What the one-pass reader does not take: -0, "12" (encoding/json
	// reads a string holding a number as one), 1.0, batches, errors.
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
