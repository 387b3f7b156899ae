package proxy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvhash/kvhash/router/internal/benchalt"
)

// completionBody is a /v1/completions body as the demo's replay sends it:
// n token ids (a tokenizer's range, 1-6 digits) and the usual options.
func completionBody(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	var b strings.Builder
	b.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, r.IntN(128256))
	}
	b.WriteString(`],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"temperature":0.7}`)
	return []byte(b.String())
}

// chatBody is a /v1/chat/completions body of about n bytes of message
// text: a system prompt and turns, with the escapes real text has.
func chatBody(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 2))
	words := []string{"the", "cache", "router", "prefix", "token", "engine", "naïve", "\"quoted\"", "line\nbreak", "tab\there", "日本語", "<tag>", "a", "of"}
	text := func(size int) string {
		var b strings.Builder
		for b.Len() < size {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	msgs := []map[string]string{{"role": "system", "content": text(n / 4)}}
	for i := 0; i < 6; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": text(n / 8)})
	}
	body, err := json.Marshal(map[string]any{
		"model": "meta-llama/Llama-3.1-8B-Instruct", "messages": msgs, "max_tokens": 64, "stream": true,
		"stream_options": map[string]bool{"include_usage": true}, "add_generation_prompt": true,
	})
	if err != nil {
		panic(err)
	}
	return body
}

// BenchmarkParseCompletion: the proxy's body parse against the
// encoding/json one it replaced (oracleParseCompletion), alternated in
// blocks within each run so both see the same machine; new/old is the
// ratio of their times (below 1: the new parse is faster).
func BenchmarkParseCompletion(b *testing.B) {
	cases := []struct {
		name string
		body []byte
		chat bool
	}{
		{"512-tokens", completionBody(512), false},
		{"4k-tokens", completionBody(4096), false},
		{"12k-tokens", completionBody(12288), false},
		{"chat-48KiB", chatBody(48 << 10), true},
		{"text-2KiB", []byte(`{"model":"m","prompt":` + mustJSON(strings.Repeat("a prompt of plain words ", 85)) + `,"max_tokens":16}`), false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			benchalt.Run(b, func() {
				if _, err := parseCompletion(c.body, c.chat); err != nil {
					b.Fatal(err)
				}
			}, func() {
				if _, err := oracleParseCompletion(c.body, c.chat); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// BenchmarkParseTokenizeAnswer: an engine's /tokenize answer for a text
// or chat prompt (vLLM's shape), read against the encoding/json reading
// it replaced, alternated.
func BenchmarkParseTokenizeAnswer(b *testing.B) {
	prompt := completionBody(12288)
	ids, err := oracleParseCompletion(prompt, false)
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte(fmt.Sprintf(`{"count":%d,"max_model_len":131072,"tokens":%s,"token_strs":null}`, len(ids.TokenIDs), mustJSON(ids.TokenIDs)))
	b.Run("12k-tokens", func(b *testing.B) {
		benchalt.Run(b, func() {
			if _, ok := readTokenizeAnswer(answer); !ok {
				b.Fatal("no tokens")
			}
		}, func() {
			if _, ok := oracleTokenizeAnswer(answer); !ok {
				b.Fatal("no tokens")
			}
		})
	})
}
