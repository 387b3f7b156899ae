package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// eventFields are the members POST /v1/events takes at each level of a
// Dynamo-JSON event. core.DecodeEvent skips unknown members (Dynamo's
// serde does, and its streams may grow fields); kvrouter's own API
// refuses them, as its other endpoints do: a misspelt field would be
// ignored silently.
var eventFields = map[string][]string{
	"event":   {"event_id", "dp_rank", "data"},
	"data":    {"stored", "removed"},
	"stored":  {"parent_hash", "start_position", "blocks"},
	"removed": {"block_hashes"},
	"block":   {"block_hash", "tokens_hash", "mm_extra_info"},
}

// checkEventFields names the first unknown member of one event (path
// like data.stored.blocks[0].tokens_hsh); malformed JSON is left to the
// decoder to word.
func checkEventFields(raw []byte) error {
	var ev map[string]json.RawMessage
	if json.Unmarshal(raw, &ev) != nil {
		return nil
	}
	if err := checkMembers(ev, "event", ""); err != nil {
		return err
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(ev["data"], &data) != nil {
		return nil // "cleared", or malformed: the decoder's
	}
	if err := checkMembers(data, "data", "data."); err != nil {
		return err
	}
	for kind, body := range data {
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		prefix := "data." + kind + "."
		if err := checkMembers(m, kind, prefix); err != nil {
			return err
		}
		var blocks []map[string]json.RawMessage
		if kind != "stored" || json.Unmarshal(m["blocks"], &blocks) != nil {
			continue
		}
		for i, b := range blocks {
			if err := checkMembers(b, "block", fmt.Sprintf("%sblocks[%d].", prefix, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkMembers(m map[string]json.RawMessage, level, path string) error {
	for k := range m {
		if !slices.Contains(eventFields[level], k) {
			return badRequest("unknown_field", "unknown field %q (at %s%s); want %v", k, path, k, eventFields[level])
		}
	}
	return nil
}

// checkEventsFields is checkEventFields for a body of one event or an
// array of them.
func checkEventsFields(body []byte) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return checkEventFields(trimmed)
	}
	var raws []json.RawMessage
	if json.Unmarshal(trimmed, &raws) != nil {
		return nil
	}
	for i, raw := range raws {
		if err := checkEventFields(raw); err != nil {
			e := err.(*apiError)
			e.Message = fmt.Sprintf("event [%d]: %s", i, e.Message)
			return e
		}
	}
	return nil
}
