package serve

import (
	"fmt"
	"net/url"
	"testing"
)

// A request_id /v1/route accepts is one the client can free as sent,
// its path segment escaped as URLs escape one.
func TestRequestIDsAreFreedAsSent(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	for _, id := range []string{"plain", "a/b", "é ü", "%41", "?x#y", "...", ".a", "a\\b", "\ufffe"} {
		t.Run(id, func(t *testing.T) {
			s.must(200, "POST", "/v1/route", fmt.Sprintf(`{"model":"m","token_ids":[1,2,3,4,5],"request_id":%q}`, id), nil)
			s.must(200, "POST", "/v1/requests/"+url.PathEscape(id)+"/prefill_done", "", nil)
			s.must(200, "DELETE", "/v1/requests/"+url.PathEscape(id), "", nil)
		})
	}
}
