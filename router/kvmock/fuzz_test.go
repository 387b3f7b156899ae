package kvmock

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`{"model":"kvmock","prompt":[1,2,3,4,5],"max_tokens":3}`,
	`{"prompt":"hello world","stream":true,"stream_options":{"include_usage":true}}`,
	`{"prompt":[1,2,3,4,5,6,7,8,9],"cache_salt":"tenant-7","max_tokens":2}`,
	`{"prompt":[[1,2,3]]}`,
	`{"prompt":["a b c"],"add_special_tokens":false}`,
	`{"prompt":[[1],[2]]}`,
	`{"prompt":[-1]}`,
	`{"prompt":[4294967296]}`,
	`{"prompt":[1e3]}`,
	`{"prompt":null}`,
	`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":2}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"continue_final_message":true,"add_generation_prompt":false}`,
	`{"messages":[{"role":"assistant","content":null}]}`,
	`{"prompt":"x","messages":[]}`,
	`{"n":2,"prompt":[1]}`,
	`[]`,
	`{} {}`,
	`"just a string"`,
}

// FuzzDecodeRequests: no body makes a decoder panic, and what a decoder
// accepts is a request the engine can be asked to run.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	tok := NewTokenizer(1000)
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, decode := range map[string]func([]byte, Tokenizer, int) (genParams, error){
			"completion": decodeCompletion, "chat": decodeChat,
		} {
			p, err := decode(body, tok, 16)
			if err != nil {
				if statusOf(err) != http.StatusBadRequest {
					t.Fatalf("%s: a decoding error must be a 400: %v", name, err)
				}
				continue
			}
			if len(p.req.Prompt) == 0 {
				t.Fatalf("%s: accepted an empty prompt", name)
			}
			if p.req.MaxTokens < 1 {
				t.Fatalf("%s: accepted max_tokens %d", name, p.req.MaxTokens)
			}
			if p.includeUsage && !p.stream {
				t.Fatalf("%s: include_usage without a stream", name)
			}
		}
		if _, _, err := decodeTokenize(body, tok); err != nil && statusOf(err) != http.StatusBadRequest {
			t.Fatalf("tokenize: a decoding error must be a 400: %v", err)
		}
	})
}

// FuzzHandler sends every body to every POST route of a live engine: the
// answer is always a known status, errors are OpenAI JSON, and the engine
// ends every request with its blocks free.
func FuzzHandler(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	cfg := testConfig()
	cfg.Speedup = 1e9
	e, err := NewEngine(cfg, testIDs{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	h := NewHandler(e, nil, nil)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/tokenize"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			switch rec.Code {
			case http.StatusOK:
			case http.StatusBadRequest, http.StatusNotFound:
				var eb errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Message == "" {
					t.Fatalf("%s: error %d is not OpenAI JSON: %q", path, rec.Code, rec.Body.String())
				}
			default:
				t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body.String())
			}
		}
		if st := e.State(); st.Running != 0 || st.Cache.FreeBlocks != st.Cache.NumBlocks {
			t.Fatalf("engine not idle after the requests: %+v", st)
		}
	})
}
