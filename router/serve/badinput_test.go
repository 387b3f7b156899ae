package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadInputGetsAJSONErrorNamingTheProblem(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = 4096
	cfg.Limits.MaxTokens = 64
	s := newTestServer(t, cfg)
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)

	big := `{"model":"m","token_ids":[` + strings.Repeat("1,", 3000) + `1]}`
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string // the error's code
		contains                 string // in the message
	}{
		{"malformed json", "POST", "/v1/route", `{"model":"m",`, 400, "invalid_json", "malformed"},
		{"not an object", "POST", "/v1/route", `[1,2]`, 400, "invalid_type", "route"},
		{"empty body", "POST", "/v1/route", ``, 400, "empty_body", "empty"},
		{"trailing data", "POST", "/v1/route", `{"model":"m","token_ids":[]} {}`, 400, "trailing_data", "after"},
		{"unknown field named", "POST", "/v1/route", `{"model":"m","token_ids":[],"tokens":[1]}`, 400, "unknown_field", `"tokens"`},
		{"unknown override field", "POST", "/v1/route", `{"model":"m","token_ids":[],"router_config_override":{"temp":1}}`, 400, "unknown_field", `"temp"`},
		{"wrong type", "POST", "/v1/route", `{"model":"m","token_ids":"1 2 3"}`, 400, "invalid_type", "token_ids"},
		{"negative token", "POST", "/v1/route", `{"model":"m","token_ids":[-1]}`, 400, "invalid_type", "token_ids"},
		{"token above u32", "POST", "/v1/route", `{"model":"m","token_ids":[4294967296]}`, 400, "invalid_type", "token_ids"},
		{"fractional token", "POST", "/v1/route", `{"model":"m","token_ids":[1.5]}`, 400, "invalid_type", "token_ids"},
		{"missing model", "POST", "/v1/route", `{"token_ids":[1]}`, 400, "missing_field", "model"},
		{"missing tokens", "POST", "/v1/route", `{"model":"m"}`, 400, "missing_field", "token_ids"},
		{"empty tokens", "POST", "/v1/route", `{"model":"m","token_ids":[]}`, 400, "invalid_value", "token_ids is empty"},
		{"request id not UTF-8", "POST", "/v1/route", "{\"model\":\"m\",\"token_ids\":[1],\"request_id\":\"a\xffb\"}", 400, "invalid_value", "UTF-8"},
		{"request id lone surrogate", "POST", "/v1/route", `{"model":"m","token_ids":[1],"request_id":"a\ud800"}`, 400, "invalid_value", "UTF-8"},
		{"request id dot dot", "POST", "/v1/route", `{"model":"m","token_ids":[1],"request_id":".."}`, 400, "invalid_value", "path segment"},
		{"request id dot", "POST", "/v1/route", `{"model":"m","token_ids":[1],"request_id":"."}`, 400, "invalid_value", "path segment"},
		{"too many tokens", "POST", "/v1/route", `{"model":"m","token_ids":[` + strings.Repeat("1,", 64) + `1]}`, 413, "too_many_tokens", "limit is 64"},
		{"body too large", "POST", "/v1/route", big, 413, "body_too_large", "4096"},
		{"unknown model", "POST", "/v1/route", `{"model":"x","token_ids":[1]}`, 404, "model_not_found", `"x"`},
		{"bad override", "POST", "/v1/route", `{"model":"m","token_ids":[1],"router_config_override":{"overlap_score_credit":2}}`, 400, "invalid_router_config_override", "overlap_score_credit"},
		{"duplicate request id", "POST", "/v1/route", `{"model":"m","token_ids":[1],"request_id":"dup"}`, 200, "", ""},
		{"duplicate request id again", "POST", "/v1/route", `{"model":"m","token_ids":[1],"request_id":"dup"}`, 409, "duplicate_request_id", "dup"},
		{"worker id above u64", "POST", "/v1/workers", `{"worker_id":18446744073709551616,"model":"m"}`, 400, "invalid_type", "worker_id"},
		{"worker id negative", "POST", "/v1/workers", `{"worker_id":-1,"model":"m"}`, 400, "invalid_type", "worker_id"},
		{"worker id float", "POST", "/v1/workers", `{"worker_id":1e3,"model":"m"}`, 400, "invalid_type", "worker_id"},
		{"worker without id", "POST", "/v1/workers", `{"model":"m"}`, 400, "missing_field", "worker_id"},
		{"worker unknown field", "POST", "/v1/workers", `{"worker_id":2,"model":"m","dp":2}`, 400, "unknown_field", `"dp"`},
		{"worker bad endpoint", "POST", "/v1/workers", `{"worker_id":2,"model":"m","endpoint":"localhost:5557"}`, 400, "invalid_endpoint", "endpoint"},
		{"worker bad transport", "POST", "/v1/workers", `{"worker_id":2,"model":"m","endpoint":"udp://h:5557"}`, 400, "invalid_endpoint", "udp"},
		{"worker dp ranks beyond ports", "POST", "/v1/workers", `{"worker_id":2,"model":"m","endpoint":"tcp://h:65535","dp_size":2}`, 400, "invalid_endpoint", "port"},
		{"worker negative dp", "POST", "/v1/workers", `{"worker_id":2,"model":"m","dp_size":-1}`, 400, "invalid_value", "dp_size"},
		{"delete bad id", "DELETE", "/v1/workers/abc", ``, 400, "invalid_value", "abc"},
		{"events without worker", "POST", "/v1/events", `{}`, 400, "missing_field", "worker_id"},
		{"events unknown worker", "POST", "/v1/events?worker_id=9", `{}`, 404, "unknown_worker", "9"},
		{"events bad worker id", "POST", "/v1/events?worker_id=-3", `{}`, 400, "invalid_value", "-3"},
		{"event malformed", "POST", "/v1/events?worker_id=1", `{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":-1,"tokens_hash":1}]}}}`, 400, "invalid_event", "block_hash"},
		{"event in array malformed", "POST", "/v1/events?worker_id=1", `[{"event_id":1,"data":"cleared"},{"event_id":2,"data":"bogus"}]`, 400, "invalid_event", "event [1]"},
		{"events not json", "POST", "/v1/events?worker_id=1", `[{"event_id":1,`, 400, "invalid_json", ""},
		{"event unknown field", "POST", "/v1/events?worker_id=1", `{"event_id":1,"data":"cleared","dp_rnak":0}`, 400, "unknown_field", `"dp_rnak"`},
		{"event unknown nested field", "POST", "/v1/events?worker_id=1", `[{"event_id":1,"data":"cleared"},{"event_id":2,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hsh":2}]}}}]`, 400, "unknown_field", `event [1]: unknown field "tokens_hsh" (at data.stored.blocks[0].tokens_hsh)`},
		{"event unknown kind field", "POST", "/v1/events?worker_id=1", `{"event_id":1,"data":{"removed":{"block_hashes":[1],"all":true}}}`, 400, "unknown_field", `"all"`},
		{"unknown endpoint", "GET", "/v2/nothing", ``, 404, "unknown_endpoint", "/v2/nothing"},
		{"wrong method", "GET", "/v1/route", ``, 405, "method_not_allowed", "POST"},
		{"wrong method with a wildcard", "PUT", "/v1/workers/7", ``, 405, "method_not_allowed", "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.do(tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, code, "%s", body)
			if tt.status < 400 {
				return
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, tt.code, e.Error.Code, "%s", body)
			assert.NotEmpty(t, e.Error.Type)
			assert.Contains(t, e.Error.Message, tt.contains)
		})
	}
	// The bad events changed nothing: worker 1 holds no block.
	var out struct {
		Workers []struct {
			Ranks []struct {
				Blocks int `json:"blocks"`
			} `json:"ranks"`
		} `json:"workers"`
	}
	s.must(200, "GET", "/v1/workers", "", &out)
	require.Len(t, out.Workers, 1, "no bad registration slipped in")
	assert.Equal(t, 0, out.Workers[0].Ranks[0].Blocks)
}

func FuzzDecodeRouteRequest(f *testing.F) {
	f.Add(`{"model":"m","token_ids":[1,2,3]}`)
	f.Add(`{"model":"m","token_ids":[],"router_config_override":{"overlap_score_credit":0.5}}`)
	f.Add(`{"model":"m","token_ids":[4294967295],"lora_name":"a","cache_salt":"s","request_id":"r"}`)
	f.Add(`{"model":1}`)
	f.Add(`[`)
	f.Add(` { "model" : "m" , "token_ids" : [ 1 , 2 ] , "router_config_override" : { "router_temperature" : 0.5 } } `)
	f.Add(`{"model":"m","token_ids":[1],}`)
	f.Add(`{"model":"m","Model":"x","token_ids":[1]}`)
	f.Add(`{"model":"m","token_ids":[1],"explain":true}`)
	f.Add(`{"model":"m","token_ids":[1],"explain":falsey}`)
	f.Fuzz(func(t *testing.T, body string) {
		// The one-pass parser accepts a subset of what encoding/json
		// accepts, with the same result.
		if fast, ok := fastRouteRequest([]byte(body)); ok {
			var slow routeRequest
			require.NoError(t, decodeStrict([]byte(body), &slow), "fast path accepted %q", body)
			assert.Equal(t, slow, fast, "%q", body)
		}
		req, _, err := decodeRouteRequest([]byte(body), 1<<20)
		if err != nil {
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			assert.GreaterOrEqual(t, ae.Status, 400)
			return
		}
		assert.NotEmpty(t, req.Model)
		assert.NotNil(t, req.TokenIDs)
	})
}

func FuzzDecodeWorkerRequest(f *testing.F) {
	f.Add(`{"worker_id":1,"model":"m","endpoint":"tcp://127.0.0.1:5557","dp_size":2}`)
	f.Add(`{"worker_id":18446744073709551615,"model":"m"}`)
	f.Add(`{"worker_id":1.0}`)
	f.Fuzz(func(t *testing.T, body string) {
		spec, err := decodeWorkerRequest([]byte(body))
		if err != nil {
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			return
		}
		assert.NotEmpty(t, spec.Model)
		_ = validateSpec(spec) // must not panic
	})
}

func FuzzDecodeEvents(f *testing.F) {
	f.Add(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}`)
	f.Add(`[{"event_id":1,"data":"cleared"},{"event_id":2,"data":{"removed":{"block_hashes":[18446744073709551615]}}}]`)
	f.Add(`[]`)
	f.Add(`[{"event_id":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		evs, err := decodeEvents([]byte(body))
		if err != nil {
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			assert.Nil(t, evs)
			return
		}
		for _, ev := range evs {
			_, err := ev.MarshalJSON()
			assert.NoError(t, err, "a decoded event encodes again")
		}
	})
}
