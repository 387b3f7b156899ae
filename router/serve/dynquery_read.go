package serve

import (
	"encoding/json"

	"github.com/kvhash/kvhash/router/internal/jsonscan"
)

// dynQueryKeys are dynQueryRequest's JSON names.
var dynQueryKeys = []string{"token_ids", "model_name", "routing_group", "tenant_id", "lora_name", "cache_salt"}

// readDynQuery reads the common shape of a Dynamo /query body in one pass
// (its token ids into tokens' memory): an object of plain keys, the
// token ids plain integers. encoding/json would validate the body, then
// skip the token array to hand it to tokenList, which reads it again.
// ok is false for anything else (and every error): the body then goes
// through decodeDynamoBody as before, which decides and words the answer
// (FuzzReadDynQuery holds the two to the same result).
func readDynQuery(body []byte, tokens []uint32) (req dynQueryRequest, ok bool) {
	ok = jsonscan.Members(body, func(key []byte, i int) int {
		var dst **string
		switch string(key) {
		case "token_ids":
			if lit, next, _ := jsonscan.Literal(body, i); lit == 'n' {
				req.TokenIDs = nil // null: absent, as encoding/json sets a pointer
				return next
			}
			ids, next, ok := jsonscan.Uint32s(tokens, body, i)
			if !ok {
				return -1
			}
			tl := tokenList(ids)
			req.TokenIDs = &tl
			return next
		case "model_name":
			dst = &req.ModelName
		case "routing_group":
			dst = &req.RoutingGroup
		case "tenant_id":
			dst = &req.TenantID
		case "lora_name":
			dst = &req.LoraName
		case "cache_salt":
			dst = &req.CacheSalt
		default:
			if jsonscan.MayName(key, dynQueryKeys...) {
				return -1 // a key encoding/json would match to a field anyway
			}
			end, ok := jsonscan.ValueEnd(body, i)
			if !ok {
				return -1
			}
			return end // unknown fields are ignored, as Dynamo does
		}
		return readOptString(body, i, dst)
	})
	return req, ok
}

// readOptString reads a *string field at i as encoding/json does (null
// sets it to nil); anything but a string or null gives up.
func readOptString(body []byte, i int, dst **string) int {
	if s, next, ok := jsonscan.String(body, i); ok {
		v := string(s)
		*dst = &v
		return next
	}
	if lit, next, _ := jsonscan.Literal(body, i); lit == 'n' {
		*dst = nil
		return next
	}
	end, ok := jsonscan.ValueEnd(body, i)
	if !ok || body[i] != '"' {
		return -1
	}
	// Escapes or invalid UTF-8: encoding/json's unquoting, on this value.
	var v string
	if json.Unmarshal(body[i:end], &v) != nil {
		return -1
	}
	*dst = &v
	return end
}
