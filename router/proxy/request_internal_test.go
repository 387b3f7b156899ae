package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseCompletionEdges pins what a client sees for the edges of the
// completion body (the same before and after the one-pass reader), and
// which bodies the one-pass reader takes itself (fast) rather than
// leaving to encoding/json.
func TestParseCompletionEdges(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		chat bool
		fast bool
		want clientRequest
		code string // an error's code ("" none)
		msg  string // an error's message, when pinned
	}{
		{name: "token ids", body: `{"model":"m","prompt":[1,2,3]}`, fast: true,
			want: clientRequest{Model: "m", TokenIDs: []uint32{1, 2, 3}}},
		{name: "whitespace everywhere", body: " \r\n{ \"model\" :\t\"m\" , \"prompt\" : [ 1 ,\n2 ] , \"stream\" : true }\n", fast: true,
			want: clientRequest{Model: "m", Stream: true, TokenIDs: []uint32{1, 2}}},
		{name: "empty list is given, not absent", body: `{"model":"m","prompt":[]}`, fast: true,
			want: clientRequest{Model: "m", TokenIDs: []uint32{}}},
		{name: "the largest id", body: `{"model":"m","prompt":[0,4294967295]}`, fast: true,
			want: clientRequest{Model: "m", TokenIDs: []uint32{0, 4294967295}}},
		{name: "unknown fields are the engine's", body: `{"model":"m","prompt":[7],"max_tokens":1,"stream_options":{"include_usage":true},"logit_bias":{"5":-1e2},"stop":["\n"]}`, fast: true,
			want: clientRequest{Model: "m", TokenIDs: []uint32{7}}},
		{name: "salt and stream", body: `{"model":"m","cache_salt":"s","stream":false,"stream":true,"prompt":[1]}`, fast: true,
			want: clientRequest{Model: "m", CacheSalt: "s", Stream: true, TokenIDs: []uint32{1}}},
		{name: "null leaves a field as it was", body: `{"model":"m","stream":true,"stream":null,"model":null,"prompt":[1]}`, fast: true,
			want: clientRequest{Model: "m", Stream: true, TokenIDs: []uint32{1}}},
		{name: "the last prompt counts", body: `{"model":"m","prompt":[1],"prompt":[2,3]}`, fast: true,
			want: clientRequest{Model: "m", TokenIDs: []uint32{2, 3}}},
		{name: "text prompt", body: `{"model":"m","prompt":"hi","add_special_tokens":false}`, fast: true,
			want: clientRequest{Model: "m", Tokenize: []byte(`{"model":"m","prompt":"hi","add_special_tokens":false}`)}},
		{name: "text prompt with escapes", body: `{"model":"m\u00e9","prompt":"a\nb\"<"}`, fast: true,
			want: clientRequest{Model: "mé", Tokenize: []byte(`{"model":"mé","prompt":"a\nb\"\u003c"}`)}},
		{name: "invalid UTF-8 becomes U+FFFD", body: "{\"model\":\"m\xff\",\"prompt\":[1]}", fast: true,
			want: clientRequest{Model: "m\uFFFD", TokenIDs: []uint32{1}}},
		{name: "chat: messages compacted, HTML-escaped, flags in order", chat: true, fast: true,
			body: "{\"add_generation_prompt\":true,\"model\":\"m\",\"messages\": [ {\"role\" : \"user\", \"content\":\"a <b> & \u2028 c\"} ],\"continue_final_message\":false,\"prompt\":{\"ignored\":1}}",
			want: clientRequest{Model: "m", Tokenize: []byte(`{"model":"m","messages":[{"role":"user","content":"a \u003cb\u003e \u0026 \u2028 c"}],"add_generation_prompt":true,"continue_final_message":false}`)}},
		{name: "chat: a null flag is omitted", chat: true, fast: true,
			body: `{"model":"m","messages":[],"add_special_tokens":true,"add_special_tokens":null}`,
			want: clientRequest{Model: "m", Tokenize: []byte(`{"model":"m","messages":[]}`)}},
		// Left to encoding/json, with the same answers as before.
		{name: "a key in another case is the field", body: `{"Model":"m","PROMPT":[1]}`,
			want: clientRequest{Model: "m", TokenIDs: []uint32{1}}},
		{name: "an escaped key is the field", body: `{"model":"m","\u0070rompt":[4]}`,
			want: clientRequest{Model: "m", TokenIDs: []uint32{4}}},
		{name: "-0 is 0", body: `{"model":"m","prompt":[-0]}`, want: clientRequest{Model: "m", TokenIDs: []uint32{0}}},
		{name: "a number in a string is read", body: `{"model":"m","prompt":["12"]}`, want: clientRequest{Model: "m", TokenIDs: []uint32{12}}},
		{name: "above u32", body: `{"model":"m","prompt":[4294967296]}`, code: "invalid_value",
			msg: "field prompt: token 0 is 4294967296; want an integer 0..4294967295"},
		{name: "a float", body: `{"model":"m","prompt":[1,2.0]}`, code: "invalid_value",
			msg: "field prompt: token 1 is 2.0; want an integer 0..4294967295"},
		{name: "an exponent", body: `{"model":"m","prompt":[1e3]}`, code: "invalid_value"},
		{name: "negative", body: `{"model":"m","prompt":[-1]}`, code: "invalid_value"},
		{name: "a leading zero", body: `{"model":"m","prompt":[01]}`, code: "invalid_json"},
		{name: "a batch", body: `{"model":"m","prompt":[[1],[2]]}`, code: "invalid_value",
			msg: "field prompt: want a string or one list of token ids (batches are not proxied): json: cannot unmarshal array into Go value of type json.Number"},
		{name: "a null token", body: `{"model":"m","prompt":[null]}`, code: "invalid_value"},
		{name: "prompt of another type", body: `{"model":"m","prompt":5}`, code: "invalid_value",
			msg: "field prompt: want a string or a list of token ids"},
		{name: "no model", body: `{"prompt":[1]}`, code: "missing_field", msg: "missing required field model"},
		{name: "empty model", body: `{"model":"","prompt":[1]}`, code: "missing_field"},
		{name: "the last prompt is null", body: `{"model":"m","prompt":[1],"prompt":null}`, code: "missing_field",
			msg: "missing required field prompt"},
		{name: "chat without messages", body: `{"model":"m","messages":null}`, chat: true, code: "missing_field",
			msg: "missing required field messages"},
		{name: "model of another type", body: `{"model":1,"prompt":[1]}`, code: "invalid_json",
			msg: "invalid JSON body: json: cannot unmarshal number into Go struct field completionFields.model of type string"},
		{name: "stream as a string", body: `{"model":"m","stream":"true","prompt":[1]}`, code: "invalid_json"},
		{name: "a trailing comma", body: `{"model":"m","prompt":[1],}`, code: "invalid_json",
			msg: "invalid JSON body: invalid character '}' looking for beginning of object key string"},
		{name: "data after the object", body: `{"model":"m","prompt":[1]} {}`, code: "invalid_json"},
		{name: "an unknown field that is not JSON", body: `{"model":"m","prompt":[1],"x":[1,]}`, code: "invalid_json"},
		{name: "a control character in a string", body: "{\"model\":\"m\",\"prompt\":[1],\"x\":\"\x01\"}", code: "invalid_json"},
		{name: "not an object", body: `[1]`, code: "invalid_json"},
		{name: "empty", body: ``, code: "invalid_json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, fast := readCompletion([]byte(c.body), c.chat)
			assert.Equal(t, c.fast, fast, "taken by the one-pass reader")
			got, err := parseCompletion([]byte(c.body), c.chat)
			want, wantErr := oracleParseCompletion([]byte(c.body), c.chat)
			require.Equal(t, wantErr, err, "as before")
			require.Equal(t, want, got, "as before")
			if c.code == "" {
				require.NoError(t, err)
				assert.Equal(t, c.want, got)
				return
			}
			var ae *apiError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, 400, ae.Status)
			assert.Equal(t, c.code, ae.Code)
			if c.msg != "" {
				assert.Equal(t, c.msg, ae.Message)
			}
		})
	}
}
