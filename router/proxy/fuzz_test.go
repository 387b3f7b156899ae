package proxy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseCompletion: any body gives a request or an error, never a
// panic; a prompt of token ids reads as encoding/json reads it, fast path
// or not.
func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":[1,2,3]}`, `{"model":"m","prompt":"hi"}`, `{"model":"m","prompt":[ ]}`,
		`{"model":"m","prompt":[01]}`, `{"model":"m","prompt":[4294967295, 4294967296]}`, `{"model":"m","prompt":[1e3]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"model":"m","prompt":[[1],[2]]}`, `{`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		req, err := parseCompletion(body, chat)
		if err != nil {
			return
		}
		require.NotEmpty(t, req.Model)
		if req.TokenIDs == nil {
			require.NotEmpty(t, req.Tokenize, "a text prompt carries its tokenize body")
			return
		}
		var v struct {
			Prompt []uint32 `json:"prompt"`
		}
		require.NoError(t, json.Unmarshal(body, &v))
		require.Equal(t, v.Prompt, req.TokenIDs)
	})
}

// FuzzFastTokenIDs: the fast path accepts only what encoding/json reads
// as a []uint32, with the same values.
func FuzzFastTokenIDs(f *testing.F) {
	for _, s := range []string{"[1,2,3]", " [ 0 , 7 ] ", "[]", "[01]", "[-1]", "[1.5]", "[4294967296]", "[1,]", "[1 2]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ids, ok := fastTokenIDs(raw)
		if !ok {
			return
		}
		var want []uint32
		dec := json.NewDecoder(bytes.NewReader(raw))
		require.NoError(t, dec.Decode(&want), "%q", raw)
		require.Equal(t, want, ids)
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
