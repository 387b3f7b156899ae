package kvmock

// The response bodies, in vLLM's OpenAI shapes. Fields vLLM always writes
// as null (logprobs, stop_reason, ...) are kept so that strict clients see
// the keys they expect.

type usageInfo struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details"`
}

// promptTokensDetails is where vLLM reports prefix-cache hits (with
// --enable-prompt-tokens-details; kvmock always reports them).
type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newUsage(tm Timings, completion int) *usageInfo {
	return &usageInfo{
		PromptTokens:        tm.PromptTokens,
		CompletionTokens:    completion,
		TotalTokens:         tm.PromptTokens + completion,
		PromptTokensDetails: &promptTokensDetails{CachedTokens: tm.CachedTokens},
	}
}

type completionChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	PromptLogprobs any     `json:"prompt_logprobs,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "text_completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usageInfo         `json:"usage,omitempty"` // whole responses and the usage chunk only
	// Kvmock is kvmock's own report: simulated timings and cache reuse.
	Kvmock *Timings `json:"kvmock,omitempty"`
}

type chatMessageOut struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessageOut `json:"message,omitempty"` // full responses
	Delta        *chatMessageOut `json:"delta,omitempty"`   // stream chunks
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   any             `json:"stop_reason,omitempty"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion" or "chat.completion.chunk"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usageInfo   `json:"usage,omitempty"`
	Kvmock  *Timings     `json:"kvmock,omitempty"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "model"
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      any    `json:"parent"`
	MaxModelLen int    `json:"max_model_len"`
}

type modelList struct {
	Object string      `json:"object"` // "list"
	Data   []modelCard `json:"data"`
}
