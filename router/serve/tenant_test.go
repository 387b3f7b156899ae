package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// Tenant "default" and "" are one tenant on every API: kvrouter's own
// and Dynamo's (whose routing_group "default" is kvrouter's "").
func TestDefaultTenantIsTheEmptyTenant(t *testing.T) {
	s := newTestServer(t, testConfig())
	prompt := seqTokens(1, 8)
	for id, tenant := range []string{"default", ""} {
		s.must(http.StatusCreated, "POST", "/v1/workers", fmt.Sprintf(`{"worker_id":%d,"model":"m","tenant":%q}`, id, tenant), nil)
		s.must(http.StatusOK, "POST", fmt.Sprintf("/v1/events?worker_id=%d", id), storedEvent(t, uint64(id), 0, nil, prompt, 100, core.Options{}), nil)
	}
	var workers struct {
		Workers []struct {
			WorkerID uint64 `json:"worker_id"`
			Tenant   string `json:"tenant"`
		} `json:"workers"`
	}
	s.must(http.StatusOK, "GET", "/v1/workers", "", &workers)
	require.Len(t, workers.Workers, 2)
	for _, w := range workers.Workers {
		assert.Empty(t, w.Tenant, "worker %d", w.WorkerID)
	}
	for _, tenant := range []string{"default", ""} {
		var d struct {
			Candidates []struct {
				WorkerID      uint64 `json:"worker_id"`
				OverlapBlocks uint32 `json:"overlap_blocks"`
			} `json:"candidates"`
		}
		s.must(http.StatusOK, "POST", "/v1/route", fmt.Sprintf(`{"model":"m","tenant":%q,"token_ids":%s}`, tenant, tokensJSON(prompt)), &d)
		require.Len(t, d.Candidates, 2, "tenant %q", tenant)
		for _, c := range d.Candidates {
			assert.Equal(t, uint32(2), c.OverlapBlocks, "tenant %q worker %d", tenant, c.WorkerID)
		}
	}
	var dump map[string]struct {
		Events []json.RawMessage `json:"events"`
	}
	s.must(http.StatusOK, "GET", "/dump", "", &dump)
	require.Len(t, dump, 1)
	assert.Len(t, dump["m:default"].Events, 4, "both workers' two blocks")
}
