package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// decodeEvents reads POST /v1/events' body: one Dynamo-JSON event or an
// array of them, every one decoded (core.DecodeEvent: exact u64 hashes)
// before any is applied, so a bad event rejects the request whole.
func decodeEvents(body []byte) ([]core.Event, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest("empty_body", "request body is empty; want an event or an array of events")
	}
	if trimmed[0] != '[' {
		ev, err := core.DecodeEvent(trimmed)
		if err != nil {
			return nil, badRequest("invalid_event", "%v", err)
		}
		return []core.Event{ev}, nil
	}
	// RawMessage keeps each element's bytes as sent: numbers never pass
	// through float64.
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return nil, jsonError(err)
	}
	evs := make([]core.Event, len(raws))
	for i, raw := range raws {
		ev, err := core.DecodeEvent(raw)
		if err != nil {
			return nil, badRequest("invalid_event", "event [%d]: %v", i, err)
		}
		evs[i] = ev
	}
	return evs, nil
}

type eventError struct {
	Index   int    `json:"index"`
	EventID uint64 `json:"event_id"`
	Message string `json:"message"`
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) error {
	raw := r.URL.Query().Get("worker_id")
	if raw == "" {
		return badRequest("missing_field", "missing query parameter worker_id")
	}
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return badRequest("invalid_value", "worker_id %q: want an unsigned 64-bit integer", raw)
	}
	if _, ok := s.ix.Worker(id); !ok {
		return notFound("unknown_worker", "worker %d is not registered (POST /v1/workers first)", id)
	}
	body, err := readBody(w, r, s.cfg.Limits.MaxBodyBytes)
	if err != nil {
		return err
	}
	// A misspelt field first: it explains a "missing" one.
	if err := checkEventsFields(body); err != nil {
		return err
	}
	evs, err := decodeEvents(body)
	if err != nil {
		return err
	}
	// Refused whole, before any applies: a dp_rank the worker does not
	// have, or stores beyond a rank's block bound.
	if err := s.ix.CheckEvents(id, evs); err != nil {
		return eventsError(err)
	}
	// Applied one by one: a violation is counted and reported, and the
	// events after it still apply, as they would from an engine stream.
	errs := []eventError{}
	for i, ev := range evs {
		if err := s.ix.ApplyEvent(id, ev); err != nil {
			if errors.Is(err, indexer.ErrUnknownWorker) {
				return notFound("unknown_worker", "%v", err) // removed meanwhile
			}
			errs = append(errs, eventError{Index: i, EventID: ev.ID, Message: err.Error()})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"worker_id": id, "events": len(evs), "errors": errs})
	return nil
}
