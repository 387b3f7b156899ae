package serve

import (
	"errors"
	"testing"
)

// FuzzCheckEventsFields: any body is accepted or refused with an
// unknown_field error naming it, never a panic; a body the check accepts
// is left to the decoder whole.
func FuzzCheckEventsFields(f *testing.F) {
	f.Add([]byte(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}`))
	f.Add([]byte(`[{"event_id":1,"data":"cleared"},{"event_id":2,"data":{"removed":{"block_hashes":[1]}}}]`))
	f.Add([]byte(`{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hsh":2}]}}}`))
	f.Add([]byte(`[{"data":{"stored":{"blocks":[1,2]}}},null,[]]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkEventsFields(body)
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.Code != "unknown_field" || ae.Status != 400 {
			t.Fatalf("want an unknown_field 400, got %v", err)
		}
	})
}
