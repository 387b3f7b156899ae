package proxy

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseCompletion: any body gives what the encoding/json parser it
// replaced gives (oracleParseCompletion): the same request, token ids
// and tokenize body byte for byte, or the same error, status, code and
// message; never a panic.
func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":[1,2,3]}`, `{"model":"m","prompt":"hi"}`, `{"model":"m","prompt":[ ]}`,
		`{"model":"m","prompt":[01]}`, `{"model":"m","prompt":[4294967295, 4294967296]}`, `{"model":"m","prompt":[1e3]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"model":"m","prompt":[[1],[2]]}`, `{`,
		`{"model":"m","prompt":[-0,"12"]}`, `{"Model":"m","prompt":[1]}`, `{"model":"m","prompt":[1],"prompt":null}`,
		`{"model":"m\u00e9","cache_salt":"s","stream":true,"stream":null,"prompt":"a\nb"}`,
		"{\"model\":\"m\xff\",\"prompt\":\"\xe2\x80\xa8<&>\"}",
		`{"model":"m","messages":[{"content":"<b> & \u2028"}],"add_special_tokens":false,"add_generation_prompt":null,"continue_final_message":true}`,
		` { "model" : "m" , "messages" : [ { "a" : [ 1 , -2.5e+3 , true , null ] } ] , "x" : { } } `,
		`{"model":"m","prompt":[1],"stream_options":{"include_usage":true},"max_tokens":1,"temperature":0.7}`,
		`{"model":"m","prompt":[1]} x`, `{"model":"m","prompt":[1],}`, `{"model":"","prompt":[1]}`, `null`, `[]`,
		`{"model":"m","prompt":[1],"\u006dodel":"n"}`, `{"model":"m","messages":{},"prompt":5}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		req, err := parseCompletion(body, chat)
		want, wantErr := oracleParseCompletion(body, chat)
		require.Equal(t, wantErr, err, "%q", body)
		require.Equal(t, want, req, "%q", body)
		if err != nil {
			return
		}
		require.NotEmpty(t, req.Model)
		if req.TokenIDs == nil {
			require.NotEmpty(t, req.Tokenize, "a text prompt carries its tokenize body")
			require.True(t, json.Valid(req.Tokenize), "%q", req.Tokenize)
		}
	})
}

// FuzzTokenizeAnswer: an engine's /tokenize answer reads as it did with
// encoding/json (oracleTokenizeAnswer): the same ids, or no token list.
func FuzzTokenizeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"count":3,"max_model_len":8192,"tokens":[1,2,3],"token_strs":null}`, `{"tokens":[]}`, `{"tokens":null}`,
		`{"Tokens":[1]}`, `{"tokens":[-1]}`, `{"tokens":[1.0]}`, `{"tokens":["1"]}`, `{"tokens":[1],"tokens":null}`,
		`{"count":1}`, `[]`, `{"tokens":[4294967296]}`, `{"tokens":[1]} x`, ` { "tokens" : [ 0 , 4294967295 ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := readTokenizeAnswer(b)
		want, wantOK := oracleTokenizeAnswer(b)
		require.Equal(t, wantOK, ok, "%q", b)
		require.Equal(t, want, got, "%q", b)
	})
}

// FuzzUsageReader: any stream, cut anywhere, never panics, and a usage
// line is found whole however the bytes arrive.
func FuzzUsageReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\ndata: [DONE]\n\n"), uint8(7))
	f.Add([]byte("{\"usage\":{\"prompt_tokens\":2}}"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		whole := newUsageReader(true)
		whole.Write(b)
		split := newUsageReader(true)
		k := int(cut) % (len(b) + 1)
		split.Write(b[:k])
		split.Write(b[k:])
		u1, ok1 := whole.Usage()
		u2, ok2 := split.Usage()
		require.Equal(t, ok1, ok2)
		require.Equal(t, u1, u2)
		plain := newUsageReader(false)
		plain.Write(b)
		_, _ = plain.Usage()
	})
}
