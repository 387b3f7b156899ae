package kvmock

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/internal/benchalt"
)

var completionEdgeSeeds = []string{
	`{"model":"m","prompt":[1,2,3],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
	` { "prompt" : [ 0 , 4294967295 ] , "n" : 1 , "cache_salt" : "s\u00e9" , "add_special_tokens" : null } `,
	`{"prompt":[1],"stream_options":{"include_usage":true},"stream_options":{},"stream":true}`,
	`{"prompt":[1],"max_tokens":null}`, `{"prompt":[1],"max_tokens":0}`, `{"prompt":[1],"max_tokens":1.5}`,
	`{"prompt":[1],"n":2}`, `{"prompt":[]}`, `{"prompt":[1],"prompt":[]}`, `{"prompt":[1],"prompt":"x y"}`,
	`{"Prompt":[1]}`, `{"prompt":[1],"temperature":0.5,"logit_bias":{"1":-100}}`, `{"prompt":[1]} }`, `{"prompt":[1]} x`,
	`{"prompt":[1],"model":5}`, `{"prompt":[1],"stream":"yes"}`, `{"prompt":[-0]}`, `{"prompt":[1,]}`,
}

// FuzzDecodeCompletionDifferential: any body decodes as it did with the
// encoding/json decoder it replaced (oracleDecodeCompletion): the same
// request or the same error.
func FuzzDecodeCompletionDifferential(f *testing.F) {
	for _, s := range append(completionEdgeSeeds, fuzzSeeds...) {
		f.Add([]byte(s))
	}
	tok := NewTokenizer(1000)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeCompletion(body, tok, 16)
		want, wantErr := oracleDecodeCompletion(body, tok, 16)
		require.Equal(t, wantErr, err, "%q", body)
		require.Equal(t, want, got, "%q", body)
	})
}

func TestReadCompletionTakesTheCommonShape(t *testing.T) {
	tok := NewTokenizer(1000)
	for _, c := range []struct {
		body string
		fast bool
	}{
		{completionEdgeSeeds[0], true}, {completionEdgeSeeds[1], true}, {completionEdgeSeeds[2], true},
		{`{"prompt":[1],"temperature":0.5,"logit_bias":{"1":-100}}`, true},
		{`{"prompt":"text"}`, false}, {`{"prompt":[[1]]}`, false}, {`{"prompt":[]}`, false}, {`{"Prompt":[1]}`, false},
		{`{"prompt":[1],"max_tokens":1.5}`, false}, {`{"prompt":[1]} }`, false},
	} {
		_, _, fast := readCompletion([]byte(c.body))
		assert.Equal(t, c.fast, fast, "%s", c.body)
		got, err := decodeCompletion([]byte(c.body), tok, 16)
		want, wantErr := oracleDecodeCompletion([]byte(c.body), tok, 16)
		assert.Equal(t, wantErr, err, "%s", c.body)
		assert.Equal(t, want, got, "%s", c.body)
	}
	p, err := decodeCompletion([]byte(completionEdgeSeeds[2]), tok, 16)
	require.NoError(t, err)
	assert.True(t, p.includeUsage, "a second stream_options object keeps the first's fields, as encoding/json does")
}

// BenchmarkDecodeCompletion: an engine's decoding of the demo's request
// (12k token ids) against the encoding/json one it replaced, alternated.
func BenchmarkDecodeCompletion(b *testing.B) {
	r := rand.New(rand.NewPCG(12288, 1))
	var sb strings.Builder
	sb.WriteString(`{"model":"m","prompt":[`)
	for i := range 12288 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, r.IntN(128256))
	}
	sb.WriteString(`],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`)
	body := []byte(sb.String())
	tok := NewTokenizer(1000)
	b.Run("12k-tokens", func(b *testing.B) {
		benchalt.Run(b, func() {
			if _, err := decodeCompletion(body, tok, 16); err != nil {
				b.Fatal(err)
			}
		}, func() {
			if _, err := oracleDecodeCompletion(body, tok, 16); err != nil {
				b.Fatal(err)
			}
		})
	})
}
