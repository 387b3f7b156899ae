package kvmock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// The request bodies kvmock understands: the fields of vLLM's OpenAI
// requests that change what a router sees. Other fields (temperature,
// stop, logprobs, ...) are accepted and ignored, as vLLM ignores unknown
// ones.

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completionRequest struct {
	Model            string          `json:"model"`
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        *int            `json:"max_tokens"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	N                *int            `json:"n"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
	CacheSalt        string          `json:"cache_salt"`
}

type chatRequest struct {
	Model                string         `json:"model"`
	Messages             []ChatMessage  `json:"messages"`
	MaxTokens            *int           `json:"max_tokens"`
	MaxCompletionTokens  *int           `json:"max_completion_tokens"`
	Stream               bool           `json:"stream"`
	StreamOptions        *streamOptions `json:"stream_options"`
	N                    *int           `json:"n"`
	AddGenerationPrompt  *bool          `json:"add_generation_prompt"`
	ContinueFinalMessage bool           `json:"continue_final_message"`
	AddSpecialTokens     bool           `json:"add_special_tokens"`
	CacheSalt            string         `json:"cache_salt"`
}

// tokenizeRequest is both of vLLM's /tokenize shapes: {"model","prompt"}
// or {"model","messages"}.
type tokenizeRequest struct {
	Model                string        `json:"model"`
	Prompt               *string       `json:"prompt"`
	Messages             []ChatMessage `json:"messages"`
	AddSpecialTokens     *bool         `json:"add_special_tokens"`
	AddGenerationPrompt  *bool         `json:"add_generation_prompt"`
	ContinueFinalMessage bool          `json:"continue_final_message"`
}

// genParams is a decoded generation request.
type genParams struct {
	model        string
	req          GenRequest
	stream       bool
	includeUsage bool
}

// badRequest is an error the client caused (HTTP 400).
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return badRequestf("invalid JSON body: %v", err)
	}
	if dec.More() {
		return badRequestf("invalid JSON body: more than one value")
	}
	return nil
}

// decodeCompletion parses a /v1/completions body: a prompt of plain
// token ids in one pass (readCompletion), anything else with
// encoding/json.
func decodeCompletion(body []byte, tok Tokenizer, defaultMaxTokens int) (genParams, error) {
	r, prompt, fast := readCompletion(body)
	if !fast {
		r = completionRequest{}
		if err := decodeJSON(body, &r); err != nil {
			return genParams{}, err
		}
	}
	if err := checkN(r.N); err != nil {
		return genParams{}, err
	}
	if !fast {
		addSpecial := r.AddSpecialTokens == nil || *r.AddSpecialTokens
		var err error
		if prompt, err = decodePrompt(r.Prompt, tok, addSpecial); err != nil {
			return genParams{}, err
		}
	}
	maxTokens, err := pickMaxTokens(defaultMaxTokens, r.MaxTokens)
	if err != nil {
		return genParams{}, err
	}
	return genParams{
		model:        r.Model,
		req:          GenRequest{Prompt: prompt, MaxTokens: maxTokens, Tag: SeqTag{Salt: r.CacheSalt}},
		stream:       r.Stream,
		includeUsage: r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage,
	}, nil
}

// decodeChat parses a /v1/chat/completions body.
func decodeChat(body []byte, tok Tokenizer, defaultMaxTokens int) (genParams, error) {
	var r chatRequest
	if err := decodeJSON(body, &r); err != nil {
		return genParams{}, err
	}
	if err := checkN(r.N); err != nil {
		return genParams{}, err
	}
	prompt, err := chatPrompt(tok, r.Messages, r.AddGenerationPrompt, r.ContinueFinalMessage, r.AddSpecialTokens)
	if err != nil {
		return genParams{}, err
	}
	maxTokens, err := pickMaxTokens(defaultMaxTokens, r.MaxCompletionTokens, r.MaxTokens)
	if err != nil {
		return genParams{}, err
	}
	return genParams{
		model:        r.Model,
		req:          GenRequest{Prompt: prompt, MaxTokens: maxTokens, Tag: SeqTag{Salt: r.CacheSalt}},
		stream:       r.Stream,
		includeUsage: r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage,
	}, nil
}

// decodeTokenize parses a /tokenize body into its model and token ids.
func decodeTokenize(body []byte, tok Tokenizer) (string, []uint32, error) {
	var r tokenizeRequest
	if err := decodeJSON(body, &r); err != nil {
		return "", nil, err
	}
	switch {
	case r.Prompt != nil && r.Messages != nil:
		return "", nil, badRequestf("give either prompt or messages, not both")
	case r.Prompt != nil:
		addSpecial := r.AddSpecialTokens == nil || *r.AddSpecialTokens // vLLM: true for prompts
		return r.Model, tok.Encode(nil, *r.Prompt, addSpecial), nil
	case r.Messages != nil:
		addSpecial := r.AddSpecialTokens != nil && *r.AddSpecialTokens // vLLM: false for chat
		ids, err := chatPrompt(tok, r.Messages, r.AddGenerationPrompt, r.ContinueFinalMessage, addSpecial)
		return r.Model, ids, err
	}
	return "", nil, badRequestf("prompt or messages is required")
}

// chatPrompt applies the chat template. vLLM's defaults:
// add_generation_prompt true; it and continue_final_message exclude each
// other. The template starts with BOS already, so add_special_tokens adds
// a second one, as it does with real templates that include BOS.
func chatPrompt(tok Tokenizer, msgs []ChatMessage, addGen *bool, continueFinal, addSpecial bool) ([]uint32, error) {
	gen := addGen == nil || *addGen
	if continueFinal {
		if addGen != nil && *addGen {
			return nil, badRequestf("cannot set both continue_final_message and add_generation_prompt to true")
		}
		gen = false
	}
	ids, err := tok.applyChatTemplate(msgs, gen)
	if err != nil {
		return nil, &badRequest{msg: err.Error()}
	}
	if continueFinal && len(ids) > 1 && ids[len(ids)-1] == endTurnTokenID {
		ids = ids[:len(ids)-1] // the last message stays open
	}
	if addSpecial {
		ids = append([]uint32{bosTokenID}, ids...)
	}
	return ids, nil
}

func checkN(n *int) error {
	if n != nil && *n != 1 {
		return badRequestf("n = %d: kvmock generates one choice per request", *n)
	}
	return nil
}

// pickMaxTokens takes the first limit given, else the default.
func pickMaxTokens(def int, limits ...*int) (int, error) {
	for _, l := range limits {
		if l == nil {
			continue
		}
		if *l < 1 {
			return 0, badRequestf("max_tokens must be at least 1, got %d", *l)
		}
		return *l, nil
	}
	return def, nil
}

// decodePrompt reads a completion prompt: text, token ids, or a batch of
// exactly one of either. kvmock serves one prompt per request; a batch of
// several is refused rather than half-served.
func decodePrompt(raw json.RawMessage, tok Tokenizer, addSpecial bool) ([]uint32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequestf("prompt is required")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequestf("prompt: %v", err)
		}
		return nonEmpty(tok.Encode(nil, s, addSpecial))
	case '[':
	default:
		return nil, badRequestf("prompt: want a string, a list of token ids, or a list of one of either")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequestf("prompt: %v", err)
	}
	if len(items) == 0 {
		return nil, badRequestf("prompt is empty")
	}
	first := bytes.TrimSpace(items[0])
	if len(first) > 0 && (first[0] == '"' || first[0] == '[') {
		if len(items) > 1 {
			return nil, badRequestf("prompt is a batch of %d prompts: kvmock serves one prompt per request (send them separately)", len(items))
		}
		return decodePrompt(first, tok, addSpecial)
	}
	var nums []int64
	if err := json.Unmarshal(raw, &nums); err != nil {
		return nil, badRequestf("prompt: %v (%v)", errNotTokenID, err)
	}
	ids := make([]uint32, len(nums))
	for i, v := range nums {
		if v < 0 || v > math.MaxUint32 {
			return nil, badRequestf("prompt[%d] = %d: %v", i, v, errNotTokenID)
		}
		ids[i] = uint32(v)
	}
	return ids, nil
}

func nonEmpty(ids []uint32) ([]uint32, error) {
	if len(ids) == 0 {
		return nil, badRequestf("prompt is empty")
	}
	return ids, nil
}

var errNotTokenID = errors.New("a token id must be an integer in [0, 2^32)")
