package kvmock

import (
	"encoding/json"

	"github.com/kvhash/kvhash/router/internal/jsonscan"
)

// completionKeys are completionRequest's JSON names.
var completionKeys = []string{"model", "prompt", "max_tokens", "stream", "stream_options", "n", "add_special_tokens", "cache_salt"}

// readCompletion reads a /v1/completions body whose prompt is a non-empty
// list of plain token ids in one pass, the ids straight into their slice:
// encoding/json would validate the body, skip the prompt, then read it
// twice more (its items, then as numbers). The other fields are small
// and decoded with encoding/json, each on its own value. ok is false for
// any other body (a text prompt, a batch, an error, an escaped or
// differently cased key): decodeCompletion then reads it as before
// (FuzzDecodeCompletionDifferential holds the two to the same result).
func readCompletion(body []byte) (r completionRequest, prompt []uint32, ok bool) {
	ok = jsonscan.Members(body, func(key []byte, i int) int {
		var field any
		switch string(key) {
		case "prompt":
			ids, next, ok := jsonscan.Uint32s(nil, body, i)
			if !ok {
				return -1
			}
			prompt = ids
			return next
		case "model":
			field = &r.Model
		case "max_tokens":
			field = &r.MaxTokens
		case "stream":
			field = &r.Stream
		case "stream_options":
			field = &r.StreamOptions
		case "n":
			field = &r.N
		case "add_special_tokens":
			field = &r.AddSpecialTokens
		case "cache_salt":
			field = &r.CacheSalt
		default:
			if jsonscan.MayName(key, completionKeys...) {
				return -1 // a key encoding/json would match to a field anyway
			}
		}
		end, ok := jsonscan.ValueEnd(body, i)
		if !ok {
			return -1
		}
		if field != nil && json.Unmarshal(body[i:end], field) != nil {
			return -1
		}
		return end
	})
	if !ok || len(prompt) == 0 {
		return completionRequest{}, nil, false
	}
	return r, prompt, true
}
