package serve

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
)

// routeRequest is POST /v1/route.
type routeRequest struct {
	Model                string          `json:"model"`
	Tenant               string          `json:"tenant"`
	TokenIDs             tokenList       `json:"token_ids"`
	LoraName             string          `json:"lora_name"`
	CacheSalt            string          `json:"cache_salt"`
	RequestID            string          `json:"request_id"`
	RouterConfigOverride *route.Override `json:"router_config_override"`
	// Explain adds each candidate's cost terms to the answer.
	Explain bool `json:"explain"`
}

// decodeRouteRequest is the body decoder of POST /v1/route; it also says
// whether the caller asked for the cost terms.
func decodeRouteRequest(body []byte, maxTokens int) (route.Request, bool, error) {
	return decodeRouteRequestInto(body, maxTokens, nil)
}

// decodeRouteRequestInto is decodeRouteRequest with the token ids parsed
// into tokens' memory when it can (the fast path).
func decodeRouteRequestInto(body []byte, maxTokens int, tokens []uint32) (route.Request, bool, error) {
	req, ok := fastRouteRequestInto(body, tokens)
	if !ok {
		req = routeRequest{}
		if err := decodeStrict(body, &req); err != nil {
			return route.Request{}, false, err
		}
	}
	if err := requireFields(field("model", req.Model != ""), field("token_ids", req.TokenIDs != nil)); err != nil {
		return route.Request{}, false, err
	}
	if err := checkTokens(len(req.TokenIDs), maxTokens); err != nil {
		return route.Request{}, false, err
	}
	if len(req.TokenIDs) == 0 {
		// Nothing to route: no blocks to match, no prefill, and an active
		// request that would count as load until freed.
		return route.Request{}, false, badRequest("invalid_value", "token_ids is empty; want the prompt's token ids")
	}
	if err := checkRequestID(req.RequestID); err != nil {
		return route.Request{}, false, err
	}
	return route.Request{
		Model: req.Model, Tenant: req.Tenant, TokenIDs: req.TokenIDs, LoraName: req.LoraName,
		CacheSalt: req.CacheSalt, RequestID: req.RequestID, Override: req.RouterConfigOverride,
	}, req.Explain, nil
}

func (s *Server) postRoute(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	// The body is garbage once decoded (the request copies what it keeps):
	// its buffer goes back to the pool, a few KiB less to collect a route.
	in := bufPool.Get().(*[]byte)
	defer bufPool.Put(in)
	body, err := readBodyInto((*in)[:0], w, r, s.cfg.Limits.MaxBodyBytes)
	*in = body
	if err != nil {
		return err
	}
	// The token ids and the candidates are garbage once the answer is
	// written (Route keeps neither): pooled too.
	tp := tokenPool.Get().(*[]uint32)
	defer tokenPool.Put(tp)
	req, explain, err := decodeRouteRequestInto(body, s.cfg.Limits.MaxTokens, *tp)
	if err != nil {
		return err
	}
	if err := s.checkLabels(label{"model", req.Model}, label{"tenant", req.Tenant}); err != nil {
		return err
	}
	if c := cap(req.TokenIDs); c > cap(*tp) && c <= maxPooledTokens {
		*tp = req.TokenIDs[:0] // grown: keep the larger buffer
	}
	cp := candidatePool.Get().(*[]route.Candidate)
	defer candidatePool.Put(cp)
	d, err := s.rt.RouteAppend(*cp, req)
	if err != nil {
		s.m.routeErrors.Inc()
		return routeError(err)
	}
	*cp = d.Candidates[:0]
	s.m.routeOK.Inc()
	s.m.routeOverlap.Observe(float64(d.OverlapBlocks))
	bp := bufPool.Get().(*[]byte)
	*bp = appendDecision((*bp)[:0], &d, explain)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(*bp))) // one write, not chunks
	_, _ = w.Write(*bp)
	bufPool.Put(bp)
	s.m.routeLatency.Observe(time.Since(start).Seconds())
	return nil
}

// checkRequestID refuses a request_id the client could not name again to
// free it: one that is not valid UTF-8 (JSON decoding replaces the bytes
// with U+FFFD, so the id kept is not the one sent) and "." or "..", which
// a URL path cannot carry as a segment (/v1/requests/{id} is cleaned).
func checkRequestID(id string) error {
	switch {
	case strings.ContainsRune(id, utf8.RuneError):
		return badRequest("invalid_value", "request_id %q is not valid UTF-8 (or holds U+FFFD): it could not be freed as sent", id)
	case id == "." || id == "..":
		return badRequest("invalid_value", "request_id %q cannot be a URL path segment: it could not be freed", id)
	}
	return nil
}

// maxPooledTokens: larger token buffers are left to the collector rather
// than kept in the pool.
const maxPooledTokens = 64 << 10

var (
	tokenPool     = sync.Pool{New: func() any { s := make([]uint32, 0, 4096); return &s }}
	candidatePool = sync.Pool{New: func() any { s := make([]route.Candidate, 0, 128); return &s }}
)

// routeError maps the router's errors onto statuses.
func routeError(err error) error {
	switch {
	case errors.Is(err, indexer.ErrUnknownModel):
		return notFound("model_not_found", "%v", err)
	case errors.Is(err, route.ErrInvalidParams):
		return badRequest("invalid_router_config_override", "%v", err)
	case errors.Is(err, route.ErrDuplicateRequest):
		return conflict("duplicate_request_id", "%v", err)
	case errors.Is(err, route.ErrNoCandidates):
		return unavailable("no_worker", "%v", err)
	case errors.Is(err, core.ErrInvalidArgument):
		return badRequest("invalid_value", "%v", err)
	}
	return err
}

func (s *Server) postPrefillDone(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("request_id")
	if !s.rt.PrefillDone(id) {
		return notFound("unknown_request", "request %q is not active (never routed, freed or expired)", id)
	}
	writeJSON(w, http.StatusOK, map[string]string{"request_id": id, "status": "prefill_done"})
	return nil
}

func (s *Server) deleteRequest(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("request_id")
	if !s.rt.Free(id) {
		return notFound("unknown_request", "request %q is not active (never routed, freed or expired)", id)
	}
	writeJSON(w, http.StatusOK, map[string]string{"request_id": id, "status": "freed"})
	return nil
}
