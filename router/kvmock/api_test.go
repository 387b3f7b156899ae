package kvmock

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startAPI(t *testing.T, cfg Config) (*httptest.Server, *Engine) {
	t.Helper()
	e, _ := newTestEngine(t, cfg)
	srv := httptest.NewServer(NewHandler(e, nil, nil))
	t.Cleanup(srv.Close)
	return srv, e
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func decodeInto[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return v
}

// completionOut is what a client reads from a completion response.
type completionOut struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int             `json:"index"`
		Text         string          `json:"text"`
		FinishReason *string         `json:"finish_reason"`
		Message      *chatMessageOut `json:"message"`
		Delta        *chatMessageOut `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Kvmock *Timings `json:"kvmock"`
}

func TestCompletionsPromptShapes(t *testing.T) {
	srv, e := startAPI(t, testConfig())
	text := "The quick brown fox, again."
	textTokens := len(e.Tokenizer().Encode(nil, text, true))
	tests := []struct {
		name       string
		prompt     string
		wantTokens int
	}{
		{"token ids", `[1, 2, 3, 4, 5, 6]`, 6},
		{"one list of token ids", `[[7, 8, 9]]`, 3},
		{"text", strconv.Quote(text), textTokens},
		{"one text in a list", `[` + strconv.Quote(text) + `]`, textTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/completions", `{"model":"kvmock","prompt":`+tc.prompt+`,"max_tokens":5}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			out := decodeInto[completionOut](t, body)
			assert.True(t, strings.HasPrefix(out.ID, "cmpl-"))
			assert.Equal(t, "text_completion", out.Object)
			assert.Equal(t, "kvmock", out.Model)
			require.Len(t, out.Choices, 1)
			assert.Equal(t, "length", *out.Choices[0].FinishReason)
			assert.Len(t, strings.Fields(out.Choices[0].Text), 5, "one word per generated token")
			require.NotNil(t, out.Usage)
			assert.Equal(t, tc.wantTokens, out.Usage.PromptTokens)
			assert.Equal(t, 5, out.Usage.CompletionTokens)
			assert.Equal(t, tc.wantTokens+5, out.Usage.TotalTokens)
			require.NotNil(t, out.Kvmock)
			assert.Equal(t, tc.wantTokens, out.Kvmock.PromptTokens)
			assert.Equal(t, strconv.Itoa(tc.wantTokens), resp.Header.Get(HeaderPromptTokens))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
}

func TestCompletionsCachedPromptReportsHitsAndLowerTTFT(t *testing.T) {
	cfg := testConfig()
	cfg.PrefillTokensPerSec = 1000
	srv, _ := startAPI(t, cfg)
	body := `{"prompt":` + jsonIDs(seqTokens(1, 64)) + `,"max_tokens":2}`
	_, b1 := post(t, srv.URL+"/v1/completions", body)
	resp, b2 := post(t, srv.URL+"/v1/completions", body)
	cold, warm := decodeInto[completionOut](t, b1), decodeInto[completionOut](t, b2)

	assert.Equal(t, 0, cold.Usage.PromptTokensDetails.CachedTokens)
	assert.Equal(t, 60, warm.Usage.PromptTokensDetails.CachedTokens, "15 of 16 blocks: the last prompt token is recomputed")
	assert.Equal(t, 60, warm.Kvmock.CachedTokens)
	assert.Less(t, warm.Kvmock.TTFTMs, cold.Kvmock.TTFTMs)
	assert.Equal(t, "60", resp.Header.Get(HeaderCachedTokens))
	ttft, err := strconv.ParseFloat(resp.Header.Get(HeaderTTFTMs), 64)
	require.NoError(t, err)
	assert.InDelta(t, warm.Kvmock.TTFTMs, ttft, 0.001)
	assert.Equal(t, cold.Choices[0].Text, warm.Choices[0].Text, "deterministic output")
}

func jsonIDs(ids []uint32) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// readSSE reads a whole event stream: the JSON payloads, and whether it
// ended with [DONE].
func readSSE(t *testing.T, r io.Reader) ([]string, bool) {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), "SSE line %q", line)
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			for sc.Scan() {
				assert.Empty(t, sc.Text(), "nothing after [DONE]")
			}
			return events, true
		}
		events = append(events, data)
	}
	require.NoError(t, sc.Err())
	return events, false
}

func TestCompletionsStream(t *testing.T) {
	srv, _ := startAPI(t, testConfig())
	for _, includeUsage := range []bool{false, true} {
		t.Run("include_usage="+strconv.FormatBool(includeUsage), func(t *testing.T) {
			body := `{"prompt":[5,6,7,8,9],"max_tokens":4,"stream":true,"stream_options":{"include_usage":` + strconv.FormatBool(includeUsage) + `}}`
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
			assert.Equal(t, "5", resp.Header.Get(HeaderPromptTokens), "timing headers come with the first token")
			assert.NotEmpty(t, resp.Header.Get(HeaderTTFTMs))

			events, done := readSSE(t, resp.Body)
			require.True(t, done, "the stream ends with data: [DONE]")
			wantEvents := 4
			if includeUsage {
				wantEvents = 5
			}
			require.Len(t, events, wantEvents)
			var id string
			for i, ev := range events[:4] {
				c := decodeInto[completionOut](t, []byte(ev))
				assert.Equal(t, "text_completion", c.Object)
				require.Len(t, c.Choices, 1)
				assert.NotEmpty(t, c.Choices[0].Text)
				assert.Nil(t, c.Usage)
				if i < 3 {
					assert.Nil(t, c.Choices[0].FinishReason)
				} else {
					require.NotNil(t, c.Choices[0].FinishReason)
					assert.Equal(t, "length", *c.Choices[0].FinishReason)
				}
				if id == "" {
					id = c.ID
				}
				assert.Equal(t, id, c.ID, "every chunk carries the request's id")
			}
			if includeUsage {
				u := decodeInto[completionOut](t, []byte(events[4]))
				assert.Empty(t, u.Choices)
				require.NotNil(t, u.Usage)
				assert.Equal(t, 5, u.Usage.PromptTokens)
				assert.Equal(t, 4, u.Usage.CompletionTokens)
				require.NotNil(t, u.Kvmock)
			}
		})
	}
}

func TestChatCompletions(t *testing.T) {
	srv, e := startAPI(t, testConfig())
	messages := `[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hello there"}]}]`

	_, tb := post(t, srv.URL+"/tokenize", `{"model":"kvmock","messages":`+messages+`}`)
	tok := decodeInto[tokenizeResponse](t, tb)
	want, err := e.Tokenizer().applyChatTemplate([]ChatMessage{
		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"},
	}, true)
	require.NoError(t, err)
	assert.Equal(t, want, tok.Tokens, "/tokenize applies the chat template as chat completions do")

	resp, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"kvmock","messages":`+messages+`,"max_completion_tokens":3}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	out := decodeInto[completionOut](t, b)
	assert.True(t, strings.HasPrefix(out.ID, "chatcmpl-"))
	assert.Equal(t, "chat.completion", out.Object)
	require.Len(t, out.Choices, 1)
	require.NotNil(t, out.Choices[0].Message)
	assert.Equal(t, "assistant", out.Choices[0].Message.Role)
	assert.Len(t, strings.Fields(out.Choices[0].Message.Content), 3)
	assert.Equal(t, tok.Count, out.Usage.PromptTokens, "the router's /tokenize count is the prompt the engine runs")

	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":`+messages+`,"max_tokens":2,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	events, done := readSSE(t, resp.Body)
	require.True(t, done)
	require.Len(t, events, 3, "the role delta, then one delta per token")
	first := decodeInto[completionOut](t, []byte(events[0]))
	assert.Equal(t, "chat.completion.chunk", first.Object)
	assert.Equal(t, "assistant", first.Choices[0].Delta.Role)
	last := decodeInto[completionOut](t, []byte(events[2]))
	assert.NotEmpty(t, last.Choices[0].Delta.Content)
	assert.Equal(t, "length", *last.Choices[0].FinishReason)
}

func TestTokenize(t *testing.T) {
	cfg := testConfig()
	srv, e := startAPI(t, cfg)
	tests := []struct {
		name string
		body string
		want []uint32
	}{
		{"prompt adds BOS by default", `{"model":"kvmock","prompt":"hello world"}`, e.Tokenizer().Encode(nil, "hello world", true)},
		{"prompt without special tokens", `{"prompt":"hello world","add_special_tokens":false}`, e.Tokenizer().Encode(nil, "hello world", false)},
		{"messages", `{"messages":[{"role":"user","content":"hi"}]}`, []uint32{bosTokenID, userTokenID, e.Tokenizer().Encode(nil, "hi", false)[0], endTurnTokenID, assistantTokenID}},
		{"messages without the generation prompt", `{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}`, []uint32{bosTokenID, userTokenID, e.Tokenizer().Encode(nil, "hi", false)[0], endTurnTokenID}},
		{"continue the final message", `{"messages":[{"role":"assistant","content":"hi"}],"continue_final_message":true,"add_generation_prompt":false}`, []uint32{bosTokenID, assistantTokenID, e.Tokenizer().Encode(nil, "hi", false)[0]}},
		{"empty prompt", `{"prompt":""}`, []uint32{bosTokenID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, srv.URL+"/tokenize", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &raw))
			assert.ElementsMatch(t, []string{"count", "max_model_len", "tokens", "token_strs"}, keys(raw), "vLLM's TokenizeResponse fields")
			out := decodeInto[tokenizeResponse](t, b)
			assert.Equal(t, tc.want, out.Tokens)
			assert.Equal(t, len(tc.want), out.Count)
			assert.Equal(t, cfg.MaxModelLen, out.MaxModelLen)
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHealthAndModels(t *testing.T) {
	srv, _ := startAPI(t, testConfig())
	resp, err := http.Get(srv.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	models := decodeInto[modelList](t, b)
	assert.Equal(t, "list", models.Object)
	require.Len(t, models.Data, 1)
	assert.Equal(t, "kvmock", models.Data[0].ID)
	assert.Equal(t, "model", models.Data[0].Object)
	assert.Equal(t, 256, models.Data[0].MaxModelLen)
}

func TestErrorsAreOpenAIJSON(t *testing.T) {
	srv, e := startAPI(t, testConfig())
	tests := []struct {
		name, path, body string
		status           int
		msgPart          string
	}{
		{"invalid JSON", "/v1/completions", `{"prompt":`, 400, "invalid JSON"},
		{"no prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt is required"},
		{"empty token list", "/v1/completions", `{"prompt":[]}`, 400, "empty"},
		{"batch of prompts", "/v1/completions", `{"prompt":[[1,2],[3,4]]}`, 400, "batch of 2 prompts"},
		{"batch of texts", "/v1/completions", `{"prompt":["a","b","c"]}`, 400, "batch of 3 prompts"},
		{"negative token id", "/v1/completions", `{"prompt":[1,-2]}`, 400, "prompt[1]"},
		{"fractional token id", "/v1/completions", `{"prompt":[1.5]}`, 400, "integer"},
		{"token outside the vocabulary", "/v1/completions", `{"prompt":[5000]}`, 400, "vocabulary"},
		{"prompt of the wrong type", "/v1/completions", `{"prompt":{"a":1}}`, 400, "want a string"},
		{"zero max_tokens", "/v1/completions", `{"prompt":[1],"max_tokens":0}`, 400, "max_tokens"},
		{"too long", "/v1/completions", `{"prompt":[1],"max_tokens":1000}`, 400, "maximum context length"},
		{"n > 1", "/v1/completions", `{"prompt":[1],"n":2}`, 400, "one choice"},
		{"unknown model", "/v1/completions", `{"model":"gpt-9","prompt":[1]}`, 404, "does not exist"},
		{"chat without messages", "/v1/chat/completions", `{"messages":[]}`, 400, "at least one message"},
		{"chat with an unknown role", "/v1/chat/completions", `{"messages":[{"role":"robot","content":"x"}]}`, 400, "role"},
		{"chat with an image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "text"},
		{"chat both continuation flags", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"continue_final_message":true,"add_generation_prompt":true}`, 400, "both"},
		{"tokenize with neither", "/tokenize", `{"model":"kvmock"}`, 400, "prompt or messages"},
		{"tokenize with both", "/tokenize", `{"prompt":"x","messages":[]}`, 400, "not both"},
		{"tokenize for another model", "/tokenize", `{"model":"other","prompt":"x"}`, 404, "does not exist"},
		{"no such route", "/v1/embeddings", `{}`, 404, "no route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, srv.URL+tc.path, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, string(b))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			out := decodeInto[errorBody](t, b)
			assert.Contains(t, out.Error.Message, tc.msgPart)
			assert.Equal(t, tc.status, out.Error.Code)
			assert.NotEmpty(t, out.Error.Type)
		})
	}
	assert.Equal(t, uint64(0), e.State().Stats.Requests, "no bad request reached the engine")
}

func TestWrongMethodIs405(t *testing.T) {
	srv, _ := startAPI(t, testConfig())
	resp, err := http.Get(srv.URL + "/v1/completions")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, decodeInto[errorBody](t, b).Error.Message, "use POST")
}

func TestClientDisconnectFreesTheSlot(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRunning = 1
	cfg.Speedup = 1
	cfg.DecodeTimePerToken = 50 * time.Millisecond
	srv, e := startAPI(t, cfg)

	for _, stream := range []bool{true, false} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			body := `{"prompt":[1,2,3,4,5],"max_tokens":200,"stream":` + strconv.FormatBool(stream) + `}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(body))
			require.NoError(t, err)
			errs := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs <- err
			}()
			require.Eventually(t, func() bool { return e.State().Running == 1 }, 5*time.Second, time.Millisecond)
			cancel()
			require.Error(t, <-errs)
			require.Eventually(t, func() bool {
				st := e.State()
				return st.Running == 0 && st.Cache.FreeBlocks == st.Cache.NumBlocks
			}, 5*time.Second, time.Millisecond, "the slot and the blocks come back")

			// The freed slot serves the next request at once.
			resp, b := post(t, srv.URL+"/v1/completions", `{"prompt":[9,9,9],"max_tokens":1}`)
			assert.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		})
	}
	assert.Equal(t, uint64(2), e.State().Stats.Cancelled)
}

func TestResetPrefixCacheAndStats(t *testing.T) {
	srv, e := startAPI(t, testConfig())
	post(t, srv.URL+"/v1/completions", `{"prompt":[1,2,3,4,5,6,7,8,9],"max_tokens":1}`)
	require.Positive(t, e.State().Cache.CachedBlocks)
	resp, b := post(t, srv.URL+"/reset_prefix_cache", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.Zero(t, e.State().Cache.CachedBlocks)

	r, err := http.Get(srv.URL + "/kvmock/stats")
	require.NoError(t, err)
	defer r.Body.Close()
	b, err = io.ReadAll(r.Body)
	require.NoError(t, err)
	st := decodeInto[EngineState](t, b)
	assert.Equal(t, uint64(1), st.Stats.Requests)
	assert.Equal(t, 64, st.Cache.NumBlocks)
}

func TestLoRAAndSaltKeepCachesApart(t *testing.T) {
	cfg := testConfig()
	cfg.LoRAModules = []string{"adapter-a"}
	srv, _ := startAPI(t, cfg)
	prompt := jsonIDs(seqTokens(1, 33))
	cached := func(extra string) int {
		t.Helper()
		resp, b := post(t, srv.URL+"/v1/completions", `{"prompt":`+prompt+`,"max_tokens":1`+extra+`}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return decodeInto[completionOut](t, b).Usage.PromptTokensDetails.CachedTokens
	}
	steps := []struct {
		name, extra string
		want        int
	}{
		{"base model, cold", ``, 0},
		{"base model again", ``, 32},
		{"under the adapter: other blocks", `,"model":"adapter-a"`, 0},
		{"under the adapter again", `,"model":"adapter-a"`, 32},
		{"salted: other blocks", `,"cache_salt":"tenant-1"`, 0},
		{"same salt", `,"cache_salt":"tenant-1"`, 32},
		{"another salt", `,"cache_salt":"tenant-2"`, 0},
	}
	for _, st := range steps {
		assert.Equal(t, st.want, cached(st.extra), st.name)
	}

	r, err := http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	models := decodeInto[modelList](t, b)
	require.Len(t, models.Data, 2)
	assert.Equal(t, "adapter-a", models.Data[1].ID)
	assert.Equal(t, "kvmock", models.Data[1].Parent, "an adapter's parent is the base model")

	resp, b := post(t, srv.URL+"/tokenize", `{"model":"adapter-a","prompt":"x"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

func TestHealthSwitch(t *testing.T) {
	e, _ := newTestEngine(t, testConfig())
	health := &HealthSwitch{}
	srv := httptest.NewServer(NewHandler(e, health, nil))
	defer srv.Close()
	status := func() int {
		resp, err := http.Get(srv.URL + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, status())

	resp, b := post(t, srv.URL+"/kvmock/health", `{"healthy":false}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	assert.False(t, health.Healthy())
	assert.Equal(t, http.StatusServiceUnavailable, status())
	// A sick engine still serves what it is sent (it is the router's job
	// to stop sending).
	resp, _ = post(t, srv.URL+"/v1/completions", `{"prompt":[1,2],"max_tokens":1}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	health.SetHealthy(true)
	assert.Equal(t, http.StatusOK, status())
	resp, _ = post(t, srv.URL+"/kvmock/health", `{}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestMetricsUseVLLMsNames(t *testing.T) {
	srv, _ := startAPI(t, testConfig())
	prompt := `{"prompt":[1,2,3,4,5,6,7,8,9],"max_tokens":2}`
	post(t, srv.URL+"/v1/completions", prompt)
	post(t, srv.URL+"/v1/completions", prompt)
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(b)
	for _, line := range []string{
		`vllm:num_requests_running{engine="0",model_name="kvmock"} 0`,
		`vllm:num_requests_waiting{engine="0",model_name="kvmock"} 0`,
		`vllm:kv_cache_usage_perc{engine="0",model_name="kvmock"} 0`,
		`vllm:prefix_cache_queries_total{engine="0",model_name="kvmock"} 18`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="kvmock"} 8`,
		`vllm:prompt_tokens_total{engine="0",model_name="kvmock"} 18`,
		`vllm:generation_tokens_total{engine="0",model_name="kvmock"} 4`,
		`vllm:request_success_total{engine="0",model_name="kvmock"} 2`,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="kvmock"} 2`,
	} {
		assert.Contains(t, text, line)
	}
}

func TestOversizedBodyIsRefused(t *testing.T) {
	srv, _ := startAPI(t, testConfig())
	big := `{"prompt":"` + strings.Repeat("a ", maxBodyBytes/2+1) + `"}`
	resp, b := post(t, srv.URL+"/v1/completions", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, decodeInto[errorBody](t, b).Error.Message, "too large")
}
