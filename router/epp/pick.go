package epp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/internal/httpapi"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// pick is where one request goes.
type pick struct {
	// RequestID names the request's load in the router ("" for requests
	// without a prompt, which carry none).
	RequestID string
	Model     string
	Worker    uint64
	Endpoint  string // the chosen worker's host:port
	Overlap   uint32 // prompt blocks the chosen rank holds
	// Answer is Endpoint then the fallbacks, comma-separated.
	Answer string
}

var nextRequestID atomic.Uint64

var candidatePool = sync.Pool{New: func() any { return new([]route.Candidate) }}

// completionPath reports whether path (with its query) is an OpenAI
// completion the picker reads, and whether it is the chat flavour.
func completionPath(path string) (completion, chat bool) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return true, true
	case strings.HasSuffix(path, "/completions"):
		return true, false
	}
	return false, false
}

// decide routes a completion body inside the subset hint and records its
// load. Its errors are *httpapi.Error: the gateway's immediate answer.
func (s *Server) decide(ctx context.Context, path string, body []byte, sub subset) (pick, error) {
	completion, chat := completionPath(path)
	if !completion || len(body) == 0 {
		return s.pickAny(sub)
	}
	pr, err := proxy.ParsePrompt(body, chat)
	if err != nil {
		return pick{}, err
	}
	tokens := pr.TokenIDs
	if tokens == nil {
		if s.opts.Tokenize == nil {
			return pick{}, httpapi.NewError(http.StatusBadRequest, "invalid_request_error", "token_ids_required",
				"this picker routes prompts given as token ids only (no tokenizer configured)")
		}
		if tokens, err = s.opts.Tokenize(ctx, pr); err != nil {
			return pick{}, asAPIError(err)
		}
	}
	// One table for the whole pick; a worker it lacks (registered a
	// moment ago) sends for a fresher one once.
	tab, missed := s.eps.table(), false
	eligible := func(id uint64) bool {
		a, ok := tab.byID[id]
		if !ok && !missed {
			missed, tab = true, s.eps.afterMiss()
			a, ok = tab.byID[id]
		}
		return ok && sub.allows(a) && (s.opts.Slots == nil || s.opts.Slots.SlotFree(id))
	}
	if err := s.admit(pr.Model, eligible); err != nil {
		return pick{}, err
	}
	if s.opts.Hold != nil {
		done, err := s.opts.Hold(ctx, pr.Model, tokens, pr.CacheSalt)
		if err != nil {
			return pick{}, s.holdError(err)
		}
		defer done()
	}
	id := "epp-" + strconv.FormatUint(nextRequestID.Add(1), 10)
	// The candidates' memory is reused pick after pick: they are read
	// only here (the fallbacks).
	buf := candidatePool.Get().(*[]route.Candidate)
	defer candidatePool.Put(buf)
	d, err := s.opts.Router.RouteAppend(*buf, route.Request{
		Model: pr.Model, TokenIDs: tokens, CacheSalt: pr.CacheSalt, RequestID: id, Eligible: eligible,
	})
	*buf = d.Candidates
	if err != nil {
		return pick{}, routeError(err, sub)
	}
	p := pick{RequestID: id, Model: pr.Model, Worker: d.WorkerID, Endpoint: s.eps.addr(d.WorkerID), Overlap: d.OverlapBlocks}
	if p.Endpoint == "" {
		// Deregistered between the filter and now.
		s.opts.Router.FreeNoWait(id)
		return pick{}, httpapi.NewError(http.StatusServiceUnavailable, "unavailable_error", "no_endpoint",
			"worker %d was chosen but has no base_url any more", d.WorkerID)
	}
	if s.opts.Slots != nil && !s.opts.Slots.TakeSlot(p.Worker) {
		// Another request took its last slot since the route looked.
		s.opts.Router.FreeNoWait(id)
		return pick{}, httpapi.NewError(http.StatusTooManyRequests, "rate_limit_error", "saturated",
			"model %q: worker %d's last slot was taken meanwhile", pr.Model, p.Worker)
	}
	p.Answer = s.withFallbacks(p, d.Candidates, eligible)
	s.flights.add(p.Worker, 1)
	return p, nil
}

// withFallbacks appends up to Fallbacks more endpoints, next cheapest
// first (candidates are sorted by cost), one per worker.
func (s *Server) withFallbacks(p pick, cands []route.Candidate, eligible func(uint64) bool) string {
	if s.opts.Fallbacks == 0 {
		return p.Endpoint
	}
	parts := []string{p.Endpoint}
	seen := map[uint64]bool{p.Worker: true}
	for _, c := range cands {
		if len(parts) > s.opts.Fallbacks || seen[c.WorkerID] || !eligible(c.WorkerID) {
			continue
		}
		seen[c.WorkerID] = true
		parts = append(parts, s.eps.addr(c.WorkerID))
	}
	return strings.Join(parts, ",")
}

// kick tells the Kick hook a model's load ended.
func (s *Server) kick(model string) {
	if s.opts.Kick != nil {
		s.opts.Kick(model)
	}
}

// holdError is the gateway's answer to a request Hold refused.
func (s *Server) holdError(err error) error {
	if errors.Is(err, ErrSaturated) {
		return httpapi.NewError(http.StatusTooManyRequests, "rate_limit_error", "saturated", "%v", err)
	}
	return httpapi.NewError(http.StatusServiceUnavailable, "unavailable_error", "not_admitted", "%v", err)
}

// admit sheds a request when the fleet is saturated: the Admit hook's
// verdict, or else every eligible worker at MaxInFlightPerWorker.
func (s *Server) admit(model string, eligible func(uint64) bool) error {
	if s.opts.Admit != nil {
		if err := s.opts.Admit(model); err != nil {
			if errors.Is(err, ErrSaturated) {
				return httpapi.NewError(http.StatusTooManyRequests, "rate_limit_error", "saturated", "%v", err)
			}
			return httpapi.NewError(http.StatusServiceUnavailable, "unavailable_error", "not_admitted", "%v", err)
		}
		return nil
	}
	limit := s.opts.MaxInFlightPerWorker
	if limit <= 0 {
		return nil
	}
	cands, err := s.opts.Indexer.Candidates(indexer.ModelKey{Model: model})
	if err != nil {
		return nil // the router answers unknown models
	}
	any := false
	for _, c := range cands {
		if !eligible(c.Worker.ID) {
			continue
		}
		any = true
		if s.flights.get(c.Worker.ID) < limit {
			return nil
		}
	}
	if !any {
		return nil // the router answers 503
	}
	return httpapi.NewError(http.StatusTooManyRequests, "rate_limit_error", "saturated",
		"model %q: every eligible worker has %d requests in flight", model, limit)
}

// pickAny answers a request without a prompt (GET /v1/models, a health
// probe through the gateway): any registered endpoint inside the subset,
// in turn, carrying no load.
func (s *Server) pickAny(sub subset) (pick, error) {
	all := s.eps.table().byID
	var ids []uint64
	for id, a := range all {
		if sub.allows(a) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return pick{}, noEndpoint(sub)
	}
	slices.Sort(ids)
	best := ids[int(nextRequestID.Add(1)%uint64(len(ids)))]
	return pick{Worker: best, Endpoint: all[best], Answer: all[best]}, nil
}

func routeError(err error, sub subset) error {
	switch {
	case errors.Is(err, indexer.ErrUnknownModel):
		return httpapi.NewError(http.StatusNotFound, "not_found_error", "model_not_found", "%v", err)
	case errors.Is(err, route.ErrNoCandidates):
		return noEndpoint(sub)
	}
	return httpapi.Internal(err)
}

func noEndpoint(sub subset) error {
	if sub.set {
		return httpapi.NewError(http.StatusServiceUnavailable, "unavailable_error", "no_endpoint",
			"no registered, healthy endpoint inside the gateway's subset %v", sub.addrs)
	}
	return httpapi.NewError(http.StatusServiceUnavailable, "unavailable_error", "no_endpoint", "no registered, healthy endpoint")
}

// asAPIError keeps an *httpapi.Error (the tokenizer's verdicts) and makes
// anything else a 500.
func asAPIError(err error) error {
	var ae *httpapi.Error
	if errors.As(err, &ae) {
		return ae
	}
	return httpapi.Internal(err)
}
