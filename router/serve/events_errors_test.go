package serve

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// In warn mode a violation is applied as the mode says, counted, and
// listed in the answer's errors with the event's index, as the docs say:
// a duplicate store and a reused name too.
func TestEventsListWarnedViolations(t *testing.T) {
	cfg := testConfig()
	cfg.Index.StabilityMode = "warn"
	s := newTestServer(t, cfg)
	s.must(http.StatusCreated, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	store := storedEvent(t, 1, 0, nil, seqTokens(1, 4), 500, core.Options{})
	// The same block stored again: a duplicate store. Then another block
	// under the same name 500: a reused name.
	other := storedEvent(t, 1, 0, nil, seqTokens(90, 4), 500, core.Options{})
	var ans struct {
		Events int `json:"events"`
		Errors []struct {
			Index   int    `json:"index"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	s.must(http.StatusOK, "POST", "/v1/events?worker_id=1", "["+store+","+store+","+other+"]", &ans)
	assert.Equal(t, 3, ans.Events)
	require.Len(t, ans.Errors, 2, "%+v", ans.Errors)
	assert.Equal(t, 1, ans.Errors[0].Index)
	assert.Contains(t, ans.Errors[0].Message, "duplicate_store")
	assert.Equal(t, 2, ans.Errors[1].Index)
	assert.Contains(t, ans.Errors[1].Message, "name_reused")
}
