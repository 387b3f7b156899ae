package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/httpapi"
	"github.com/kvhash/kvhash/router/internal/jsonscan"
	"github.com/kvhash/kvhash/router/route"
)

// tokenizeResponse is vLLM's POST /tokenize answer.
type tokenizeResponse struct {
	Tokens []uint32 `json:"tokens"`
}

// tokenize asks one healthy engine of the model for the request's token
// ids (its /tokenize applies the chat template to messages). Engines of
// one model share a tokenizer, so any will do: the next in round-robin
// order, which spreads the extra round trips.
func (p *Proxy) tokenize(ctx context.Context, req clientRequest) ([]uint32, error) {
	cands, err := p.ix.Candidates(indexer.ModelKey{Model: req.Model})
	if err != nil {
		return nil, routeError(err)
	}
	var urls []string
	for _, c := range cands {
		if u := p.baseURL(c.Worker.ID); u != "" && (len(urls) == 0 || urls[len(urls)-1] != u) {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, unavailable("no_worker", "model %q has no healthy worker with a base_url to tokenize the prompt", req.Model)
	}
	base := urls[int(p.rrNext.Load()%uint64(len(urls)))]
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/tokenize", bytes.NewReader(req.Tokenize))
	if err != nil {
		return nil, upstreamError("bad_base_url", "base_url %q: %v", base, err)
	}
	up.Header.Set("Content-Type", "application/json")
	p.authorize(up, nil)
	resp, err := p.side.Do(up)
	if err != nil {
		if isTimeout(err) {
			return nil, upstreamTimeout("tokenizing at %s: %v", base, err)
		}
		return nil, upstreamError("engine_unreachable", "tokenizing at %s: %v", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, upstreamError("engine_broke_off", "tokenizing at %s: %v", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		// The engine's own verdict on the prompt (an unknown model, bad
		// messages): the client's error, passed on with its status.
		return nil, engineVerdict(resp.StatusCode, b)
	}
	tokens, ok := readTokenizeAnswer(b)
	if !ok {
		return nil, upstreamError("bad_tokenize_answer", "tokenizing at %s: the answer has no token list: %s", base, truncate(b, 200))
	}
	return tokens, nil
}

// readTokenizeAnswer returns the token ids of a /tokenize answer: in one
// pass when the answer has the common shape (its tokens plain integers),
// else with encoding/json; ok is false when the answer has no token list.
func readTokenizeAnswer(b []byte) ([]uint32, bool) {
	var tokens []uint32
	fast := jsonscan.Members(b, func(key []byte, i int) int {
		if string(key) == "tokens" {
			if lit, next, _ := jsonscan.Literal(b, i); lit == 'n' {
				tokens = nil
				return next
			}
			ids, next, ok := jsonscan.Uint32s(nil, b, i)
			if !ok {
				return -1
			}
			tokens = ids
			return next
		}
		if jsonscan.MayName(key, "tokens") {
			return -1
		}
		end, ok := jsonscan.ValueEnd(b, i)
		if !ok {
			return -1
		}
		return end
	})
	if fast {
		return tokens, tokens != nil
	}
	var tr tokenizeResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.Tokens == nil {
		return nil, false
	}
	return tr.Tokens, true
}

// engineVerdict turns an engine's error answer into the error the client
// gets: its message when it is OpenAI's error object, its status kept.
func engineVerdict(status int, body []byte) error {
	var eb struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		// vLLM's older error shape: the object at the top level.
		Message string `json:"message"`
	}
	msg := string(truncate(body, 500))
	if json.Unmarshal(body, &eb) == nil {
		switch {
		case eb.Error != nil && eb.Error.Message != "":
			msg = eb.Error.Message
		case eb.Message != "":
			msg = eb.Message
		}
	}
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "upstream_error"
	}
	return httpapi.NewError(status, typ, "engine_error", "engine: %s", msg)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return append(b[:n:n], "..."...)
	}
	return b
}

// routeError maps the router's and indexer's errors onto answers.
func routeError(err error) error {
	switch {
	case errors.Is(err, indexer.ErrUnknownModel):
		return httpapi.NewError(http.StatusNotFound, "not_found_error", "model_not_found", "%v", err)
	case errors.Is(err, route.ErrNoCandidates):
		return unavailable("no_worker", "%v", err)
	}
	return fmt.Errorf("routing: %w", err)
}
