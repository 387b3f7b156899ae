package serve

import (
	"bytes"
	"unicode/utf8"

	"github.com/kvhash/kvhash/router/route"
)

// fastRouteRequest parses the common shape of a POST /v1/route body in one
// pass: an object of the known keys, strings without escapes, token_ids an
// array of plain integers. Anything else (escapes, nulls, repeated or
// unknown keys, any error) returns ok=false and the body goes through
// encoding/json (decodeStrict), which decides and words the error. So
// the fast path accepts a subset of what the strict decoder accepts, with
// the same result (FuzzDecodeRouteRequest holds it to that).
func fastRouteRequest(data []byte) (req routeRequest, ok bool) {
	return fastRouteRequestInto(data, nil)
}

// fastRouteRequestInto is fastRouteRequest parsing the token ids into
// tokens' memory (the route handler's pooled buffer; nil: a new one).
func fastRouteRequestInto(data []byte, tokens []uint32) (req routeRequest, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return req, false
	}
	i = skipSpace(data, i+1)
	var seen uint8
	for i < len(data) && data[i] != '}' {
		key, next, ok := plainString(data, i)
		if !ok {
			return req, false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return req, false
		}
		i = skipSpace(data, i+1)
		var bit uint8
		switch key {
		case "model", "tenant", "lora_name", "cache_salt", "request_id":
			s, next, ok := plainString(data, i)
			if !ok {
				return req, false
			}
			switch key {
			case "model":
				req.Model, bit = s, 1
			case "tenant":
				req.Tenant, bit = s, 2
			case "lora_name":
				req.LoraName, bit = s, 4
			case "cache_salt":
				req.CacheSalt, bit = s, 8
			case "request_id":
				req.RequestID, bit = s, 16
			}
			i = next
		case "token_ids":
			end := bytes.IndexByte(data[i:], ']')
			if end < 0 || data[i] != '[' {
				return req, false
			}
			req.TokenIDs = tokens[:0]
			if err := req.TokenIDs.UnmarshalJSON(data[i : i+end+1]); err != nil {
				return req, false
			}
			i, bit = i+end+1, 32
		case "explain":
			switch {
			case bytes.HasPrefix(data[i:], []byte("true")):
				req.Explain, i = true, i+4
			case bytes.HasPrefix(data[i:], []byte("false")):
				req.Explain, i = false, i+5
			default:
				return req, false
			}
			bit = 128
		case "router_config_override":
			end, ok := objectEnd(data, i)
			if !ok {
				return req, false
			}
			var o route.Override
			if decodeStrict(data[i:end], &o) != nil {
				return req, false
			}
			req.RouterConfigOverride, i, bit = &o, end, 64
		default:
			return req, false
		}
		if seen&bit != 0 {
			return req, false
		}
		seen |= bit
		i = skipSpace(data, i)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == '}' {
				return req, false // a trailing comma
			}
		case i < len(data) && data[i] == '}':
		default:
			return req, false
		}
	}
	if i >= len(data) {
		return req, false
	}
	if skipSpace(data, i+1) != len(data) {
		return req, false
	}
	return req, true
}

// plainString reads a JSON string at i with no escapes and no control
// characters; it returns the string and the index after it.
func plainString(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			s := data[i+1 : j]
			if !utf8.Valid(s) { // encoding/json would replace the bad bytes
				return "", i, false
			}
			return string(s), j + 1, true
		case c == '\\' || c < 0x20:
			return "", i, false
		}
	}
	return "", i, false
}

// objectEnd finds the end of the JSON object at i (strings skipped); the
// object's validity is left to its decoder.
func objectEnd(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	depth, inString := 0, false
	for j := i; j < len(data); j++ {
		c := data[j]
		switch {
		case inString && c == '\\':
			j++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}
