package kvmock

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers carrying kvmock's report on every generation response. For
// a stream they go out with the first token, when the simulated time to
// first token is known, so a proxy that copies headers passes them on.
const (
	HeaderPromptTokens = "X-Kvmock-Prompt-Tokens"
	HeaderCachedTokens = "X-Kvmock-Cached-Tokens"
	HeaderQueueMs      = "X-Kvmock-Queue-Ms"
	HeaderPrefillMs    = "X-Kvmock-Prefill-Ms"
	HeaderTTFTMs       = "X-Kvmock-Ttft-Ms"
)

func setTimingHeaders(h http.Header, tm Timings) {
	h.Set(HeaderPromptTokens, strconv.Itoa(tm.PromptTokens))
	h.Set(HeaderCachedTokens, strconv.Itoa(tm.CachedTokens))
	h.Set(HeaderQueueMs, strconv.FormatFloat(tm.QueueMs, 'f', 3, 64))
	h.Set(HeaderPrefillMs, strconv.FormatFloat(tm.PrefillMs, 'f', 3, 64))
	h.Set(HeaderTTFTMs, strconv.FormatFloat(tm.TTFTMs, 'f', 3, 64))
}

// flavor is what differs between /v1/completions and /v1/chat/completions.
type flavor interface {
	idPrefix() string
	// chunks are the stream events for one token (chat sends its role
	// delta before the first).
	chunks(h respHeader, tok Token, finish *string) []any
	usageChunk(h respHeader, tm Timings, completion int) any
	full(h respHeader, text string, finish *string, tm Timings, completion int) any
}

// respHeader is what every response of one request repeats.
type respHeader struct {
	id      string
	created int64
	model   string
}

// generate runs a decoded request on the engine and writes the response,
// streamed or whole.
func (a *api) generate(w http.ResponseWriter, r *http.Request, p genParams, f flavor) {
	lora, ok := a.checkModel(w, p.model)
	if !ok {
		return
	}
	p.req.Tag.LoraName, p.req.Tag.LoraID = lora.LoraName, lora.LoraID
	if err := a.engine.Validate(p.req); err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	h := respHeader{id: f.idPrefix() + randomHex(), created: time.Now().Unix(), model: a.cfg.Model}
	if lora.LoraName != "" {
		h.model = lora.LoraName
	}
	if p.stream {
		a.stream(w, r, p, f, h)
		return
	}
	res, err := a.engine.Generate(r.Context(), p.req, func(Token, Timings) error { return nil })
	if err != nil {
		a.failed(w, r, err)
		return
	}
	if len(res.Tokens) > 0 {
		a.metrics.ttft.Observe(res.Timings.TTFTMs / 1000)
	}
	var text strings.Builder
	for _, t := range res.Tokens {
		text.WriteString(t.Text)
	}
	setTimingHeaders(w.Header(), res.Timings)
	finish := res.FinishReason
	writeJSON(w, f.full(h, text.String(), &finish, res.Timings, len(res.Tokens)))
}

func (a *api) stream(w http.ResponseWriter, r *http.Request, p genParams, f flavor, h respHeader) {
	var sse *sseWriter
	last := p.req.MaxTokens - 1
	emit := func(tok Token, tm Timings) error {
		if sse == nil {
			a.metrics.ttft.Observe(tm.TTFTMs / 1000)
			setTimingHeaders(w.Header(), tm)
			sse = startSSE(w)
		}
		var finish *string
		if tok.Index == last {
			s := "length"
			finish = &s
		}
		for _, c := range f.chunks(h, tok, finish) {
			if err := sse.send(c); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := a.engine.Generate(r.Context(), p.req, emit)
	switch {
	case err != nil && sse == nil:
		a.failed(w, r, err)
		return
	case err != nil:
		// Mid-stream: the client is gone, or a write failed; either way
		// the engine has already freed the request. Tell a client that is
		// still there, as vLLM does, in the stream.
		if r.Context().Err() == nil {
			_ = sse.send(errorBody{Error: errorDetail{Message: err.Error(), Type: errorType(500), Code: 500}})
			_ = sse.done()
		}
		return
	}
	if p.includeUsage {
		if err := sse.send(f.usageChunk(h, res.Timings, len(res.Tokens))); err != nil {
			return
		}
	}
	_ = sse.done()
}

// failed answers an error that came before any output.
func (a *api) failed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		a.log.Debug("request cancelled by the client", "path", r.URL.Path)
		return // nobody is listening
	}
	writeError(w, statusOf(err), fmt.Sprintf("generation failed: %v", err))
}

func randomHex() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

type completionFlavor struct{}

func (completionFlavor) idPrefix() string { return "cmpl-" }

func (completionFlavor) chunks(h respHeader, tok Token, finish *string) []any {
	return []any{completionResponse{
		ID: h.id, Object: "text_completion", Created: h.created, Model: h.model,
		Choices: []completionChoice{{Index: 0, Text: tok.Text, FinishReason: finish}},
	}}
}

func (completionFlavor) usageChunk(h respHeader, tm Timings, completion int) any {
	return completionResponse{
		ID: h.id, Object: "text_completion", Created: h.created, Model: h.model,
		Choices: []completionChoice{}, Usage: newUsage(tm, completion), Kvmock: &tm,
	}
}

func (completionFlavor) full(h respHeader, text string, finish *string, tm Timings, completion int) any {
	return completionResponse{
		ID: h.id, Object: "text_completion", Created: h.created, Model: h.model,
		Choices: []completionChoice{{Index: 0, Text: text, FinishReason: finish}},
		Usage:   newUsage(tm, completion), Kvmock: &tm,
	}
}

type chatFlavor struct{}

func (chatFlavor) idPrefix() string { return "chatcmpl-" }

func (chatFlavor) chunks(h respHeader, tok Token, finish *string) []any {
	chunk := func(delta chatMessageOut, finish *string) any {
		return chatResponse{
			ID: h.id, Object: "chat.completion.chunk", Created: h.created, Model: h.model,
			Choices: []chatChoice{{Index: 0, Delta: &delta, FinishReason: finish}},
		}
	}
	out := make([]any, 0, 2)
	if tok.Index == 0 {
		out = append(out, chunk(chatMessageOut{Role: "assistant", Content: ""}, nil))
	}
	return append(out, chunk(chatMessageOut{Content: tok.Text}, finish))
}

func (chatFlavor) usageChunk(h respHeader, tm Timings, completion int) any {
	return chatResponse{
		ID: h.id, Object: "chat.completion.chunk", Created: h.created, Model: h.model,
		Choices: []chatChoice{}, Usage: newUsage(tm, completion), Kvmock: &tm,
	}
}

func (chatFlavor) full(h respHeader, text string, finish *string, tm Timings, completion int) any {
	return chatResponse{
		ID: h.id, Object: "chat.completion", Created: h.created, Model: h.model,
		Choices: []chatChoice{{Index: 0, Message: &chatMessageOut{Role: "assistant", Content: text}, FinishReason: finish}},
		Usage:   newUsage(tm, completion), Kvmock: &tm,
	}
}
