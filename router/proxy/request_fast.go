package proxy

import (
	"encoding/json"
	"strconv"

	"github.com/kvhash/kvhash/router/internal/jsonscan"
)

// completionKeys are completionFields' JSON names.
var completionKeys = []string{
	"model", "prompt", "messages", "stream", "cache_salt",
	"add_special_tokens", "add_generation_prompt", "continue_final_message",
}

// readCompletion is parseCompletion in one pass over the body for its
// common shape: an object whose keys are plain, the prompt's token ids
// plain integers. The token ids go straight into their slice and a chat
// body's messages straight into the tokenize body, with no copies of
// either on the way. ok is false for anything else (and for every
// error): decodeCompletion then reads the body as before, so a client
// sees the same answer either way (FuzzParseCompletionDifferential holds
// the two to that).
func readCompletion(body []byte, chat bool) (req clientRequest, ok bool) {
	var (
		prompt, messages []byte // raw values, nil when absent or null
		tokens           bool   // prompt is a list of token ids (req.TokenIDs)
		ast, agp, cfm    *bool  // add_special_tokens, add_generation_prompt, continue_final_message
	)
	ok = jsonscan.Members(body, func(key []byte, i int) int {
		switch string(key) {
		case "model":
			return readString(body, i, &req.Model)
		case "cache_salt":
			return readString(body, i, &req.CacheSalt)
		case "stream":
			switch lit, next, _ := jsonscan.Literal(body, i); lit {
			case 't', 'f':
				req.Stream = lit == 't'
				return next
			case 'n': // null leaves a field as it is
				return next
			}
			return -1
		case "add_special_tokens":
			return readOptBool(body, i, &ast)
		case "add_generation_prompt":
			return readOptBool(body, i, &agp)
		case "continue_final_message":
			return readOptBool(body, i, &cfm)
		case "prompt":
			if chat {
				end, _ := skipValue(body, i)
				return end
			}
			return readPrompt(body, i, &req.TokenIDs, &prompt, &tokens)
		case "messages":
			end, ok := skipValue(body, i)
			if ok && chat {
				messages = body[i:end]
				if isNull(messages) {
					messages = nil
				}
			}
			return end
		}
		if jsonscan.MayName(key, completionKeys...) {
			return -1 // a key encoding/json would match to a field anyway
		}
		end, _ := skipValue(body, i)
		return end
	})
	if !ok || req.Model == "" {
		return clientRequest{}, false
	}
	switch {
	case chat:
		if messages == nil {
			return clientRequest{}, false
		}
		b, err := appendChatTokenize(nil, req.Model, messages, ast, agp, cfm)
		if err != nil {
			return clientRequest{}, false
		}
		req.Tokenize = b
	case tokens:
		return req, true
	case prompt == nil:
		return clientRequest{}, false
	default:
		var s string
		if p, _, ok := jsonscan.String(prompt, 0); ok {
			s = string(p)
		} else if json.Unmarshal(prompt, &s) != nil {
			return clientRequest{}, false
		}
		b, err := json.Marshal(tokenizeBody{Model: req.Model, Prompt: &s, AddSpecialTokens: ast})
		if err != nil {
			return clientRequest{}, false
		}
		req.Tokenize = b
	}
	req.TokenIDs = nil
	return req, true
}

// readPrompt reads a completion's prompt at i: token ids into *ids, a
// string's raw value into *text; null clears both (the last prompt key
// counts, as with encoding/json). Anything else gives up.
func readPrompt(body []byte, i int, ids *[]uint32, text *[]byte, tokens *bool) int {
	switch {
	case i < len(body) && body[i] == '[':
		v, next, ok := jsonscan.Uint32s(nil, body, i)
		if !ok {
			return -1
		}
		*ids, *text, *tokens = v, nil, true
		return next
	case i < len(body) && body[i] == '"':
		end, ok := jsonscan.ValueEnd(body, i)
		if !ok {
			return -1
		}
		*ids, *text, *tokens = nil, body[i:end], false
		return end
	}
	if lit, next, _ := jsonscan.Literal(body, i); lit == 'n' {
		*ids, *text, *tokens = nil, nil, false
		return next
	}
	return -1
}

// readString reads a string field at i into *dst as encoding/json does
// (null leaves it as it is); anything else gives up.
func readString(body []byte, i int, dst *string) int {
	if s, next, ok := jsonscan.String(body, i); ok {
		*dst = string(s)
		return next
	}
	if lit, next, _ := jsonscan.Literal(body, i); lit == 'n' {
		return next
	}
	end, ok := skipValue(body, i)
	if !ok || body[i] != '"' {
		return -1
	}
	// Escapes or invalid UTF-8: encoding/json's unquoting, on this value.
	if json.Unmarshal(body[i:end], dst) != nil {
		return -1
	}
	return end
}

// readOptBool reads a *bool field at i as encoding/json does (null sets
// it to nil); anything else gives up.
func readOptBool(body []byte, i int, dst **bool) int {
	switch lit, next, _ := jsonscan.Literal(body, i); lit {
	case 't', 'f':
		v := lit == 't'
		*dst = &v
		return next
	case 'n':
		*dst = nil
		return next
	}
	return -1
}

// skipValue returns the index after the value at i, -1 if it is not one.
func skipValue(body []byte, i int) (int, bool) {
	end, ok := jsonscan.ValueEnd(body, i)
	if !ok {
		return -1, false
	}
	return end, true
}

// appendChatTokenize appends the chat flavour of tokenizeBody as
// json.Marshal writes it (its field order, omitempty), the messages
// compacted straight from the client's body.
func appendChatTokenize(dst []byte, model string, messages []byte, ast, agp, cfm *bool) ([]byte, error) {
	m, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"model":`...)
	dst = append(dst, m...)
	dst = append(dst, `,"messages":`...)
	dst = jsonscan.AppendCompact(dst, messages)
	for _, f := range []struct {
		key string
		v   *bool
	}{{"add_special_tokens", ast}, {"add_generation_prompt", agp}, {"continue_final_message", cfm}} {
		if f.v != nil {
			dst = append(dst, `,"`...)
			dst = append(dst, f.key...)
			dst = append(dst, `":`...)
			dst = strconv.AppendBool(dst, *f.v)
		}
	}
	return append(dst, '}'), nil
}
