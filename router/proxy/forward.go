package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kvhash/kvhash/router/internal/httpapi"
)

// Response headers the proxy adds: which worker served the request, under
// which policy, and what routing cost (microseconds).
const (
	HeaderWorker     = "X-Kvrouter-Worker"
	HeaderPolicy     = "X-Kvrouter-Policy"
	HeaderRouteUs    = "X-Kvrouter-Route-Us"
	HeaderTokenizeUs = "X-Kvrouter-Tokenize-Us"
	HeaderOverlap    = "X-Kvrouter-Overlap-Blocks"
	HeaderQueuedUs   = "X-Kvrouter-Queued-Us" // time in the admission queue
)

// hopHeaders are per connection, never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// serveCompletion is POST /v1/completions (chat false) and
// /v1/chat/completions (chat true).
func (p *Proxy) serveCompletion(w http.ResponseWriter, r *http.Request, path string, chat bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpapi.NewError(http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "request body exceeds %d bytes", mbe.Limit)
		}
		return badRequest("unreadable_body", "reading the request body: %v", err)
	}
	pol := p.opts.DefaultPolicy
	if h := r.Header.Get(PolicyHeader); h != "" {
		if pol, err = ParsePolicy(h); err != nil {
			return badRequest("invalid_policy", "header %s: %v", PolicyHeader, err)
		}
	}
	req, err := parseCompletion(body, chat)
	if err != nil {
		return err
	}
	tokens := req.TokenIDs
	var tokenizeDur time.Duration
	if tokens == nil {
		t0 := time.Now()
		if tokens, err = p.tokenize(r.Context(), req); err != nil {
			return err
		}
		tokenizeDur = time.Since(t0)
	}

	heldAt := time.Now()
	holdDone, err := p.holdKV(r.Context(), w, pol, req, tokens)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client left while held
		}
		return err // a 429, counted as rejected
	}
	heldFor := time.Since(heldAt)
	t, routeDur, queued, err := p.admit(r.Context(), w, pol, req, tokens)
	holdDone()
	queued += heldFor // held before routing, then queued for a slot
	if err != nil {
		var ae *apiError
		switch {
		case r.Context().Err() != nil:
			return nil // the client left while queued: nobody reads an answer
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
			return err // counted as rejected
		}
		p.stats.routeFailed(pol)
		return err
	}
	gated := false
	defer func() {
		if gated {
			p.endSlots(t)
		}
		p.release(t)
	}()
	p.stats.routed(pol, routeDur, tokenizeDur)
	gatedAt := time.Now()
	if gated, err = p.enterSlots(r.Context(), pol, t); err != nil {
		return nil // the client left while its engine was full: nobody reads an answer
	}
	queued += time.Since(gatedAt)

	h := w.Header()
	h.Set(HeaderWorker, strconv.FormatUint(t.WorkerID, 10))
	h.Set(HeaderPolicy, string(pol))
	h.Set(HeaderRouteUs, strconv.FormatInt(routeDur.Microseconds(), 10))
	if queued > 0 {
		h.Set(HeaderQueuedUs, strconv.FormatInt(queued.Microseconds(), 10))
	}
	if req.TokenIDs == nil {
		h.Set(HeaderTokenizeUs, strconv.FormatInt(tokenizeDur.Microseconds(), 10))
	}
	if pol == PolicyKV {
		h.Set(HeaderOverlap, strconv.FormatUint(uint64(t.Overlap), 10))
	}
	return p.forward(w, r, t, pol, path, body, req.Stream, len(tokens))
}

// copyBufs are the buffers answers are copied through: one a request in
// flight would be most of the proxy's garbage (and its collections are
// what a routing decision waits behind at p99).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// forward sends body to the chosen engine and copies its answer back,
// flushing after every read so a stream reaches the client token by
// token.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, t target, pol Policy, path string, body []byte, stream bool, promptTokens int) error {
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, t.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return upstreamError("bad_base_url", "worker %d: base_url %q: %v", t.WorkerID, t.BaseURL, err)
	}
	up.Header.Set("Content-Type", "application/json")
	if v := r.Header.Get("Accept"); v != "" {
		up.Header.Set("Accept", v)
	}
	p.authorize(up, r)
	resp, err := p.client.Do(up)
	if err != nil {
		p.stats.failed(pol)
		switch {
		case r.Context().Err() != nil:
			// The client left: nobody reads the answer.
			return nil
		case isTimeout(err):
			return upstreamTimeout("worker %d (%s) did not answer within %v", t.WorkerID, t.BaseURL, p.opts.HeaderTimeout)
		}
		p.markUnhealthy(t.WorkerID, err)
		return upstreamError("engine_unreachable", "worker %d (%s): %v", t.WorkerID, t.BaseURL, err)
	}
	defer resp.Body.Close()

	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	dropHopHeaders(h)
	if stream {
		// The length of a stream is not known; let the server chunk it.
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}

	usage := newUsageReader(stream && resp.StatusCode == http.StatusOK)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	first := true
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if first {
				first = false
				p.prefillDone(t)
			}
			usage.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				p.stats.failed(pol)
				return nil // the client left; the deferred release frees the load
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			p.stats.failed(pol)
			if r.Context().Err() == nil && !errors.Is(rerr, context.Canceled) {
				p.log.Warn("kvrouter: engine broke off its answer", "worker_id", t.WorkerID, "error", rerr.Error())
			}
			return nil // the status is sent; the client sees a cut stream
		}
	}
	if resp.StatusCode != http.StatusOK {
		p.stats.failed(pol)
		return nil
	}
	u, ok := usage.Usage()
	p.stats.completed(pol, promptTokens, u, ok)
	return nil
}
