package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/route"
)

type routeAnswer struct {
	WorkerID      json.Number `json:"worker_id"`
	DPRank        json.Number `json:"dp_rank"`
	OverlapBlocks json.Number `json:"overlap_blocks"`
	Cost          json.Number `json:"cost"`
	RequestID     string      `json:"request_id"`
	Candidates    []struct {
		WorkerID      json.Number `json:"worker_id"`
		DPRank        json.Number `json:"dp_rank"`
		OverlapBlocks json.Number `json:"overlap_blocks"`
		Cost          json.Number `json:"cost"`
		State         string      `json:"state"`
	} `json:"candidates"`
}

func TestRoutePicksTheWorkerHoldingThePrefix(t *testing.T) {
	s := newTestServer(t, testConfig())
	for _, id := range []int{1, 2, 3} {
		s.must(201, "POST", "/v1/workers", fmt.Sprintf(`{"worker_id":%d,"model":"m"}`, id), nil)
	}
	prompt := seqTokens(100, 32) // 8 blocks
	s.must(200, "POST", "/v1/events?worker_id=2", storedEvent(t, 1, 0, nil, prompt[:24], 1000, core.Options{}), nil)
	s.must(200, "POST", "/v1/events?worker_id=3", storedEvent(t, 1, 0, nil, prompt[:8], 2000, core.Options{}), nil)

	var a routeAnswer
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"request_id":"r1"}`, &a)
	assert.Equal(t, "2", a.WorkerID.String())
	assert.Equal(t, "6", a.OverlapBlocks.String())
	assert.Equal(t, "r1", a.RequestID)
	require.Len(t, a.Candidates, 3)
	assert.Equal(t, "2", a.Candidates[0].WorkerID.String(), "candidates sorted by cost")
	assert.Equal(t, "live", a.Candidates[0].State)
	_, raw := s.do("POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`}`)
	assert.NotContains(t, string(raw), "prefill_blocks", "the cost terms only on request")
	_, raw = s.do("POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"explain":true}`)
	assert.Contains(t, string(raw), `"prefill_blocks":`)
	assert.Contains(t, string(raw), `"decode_blocks":`)

	// The same prompt under a LoRA matches nothing: every worker scores 0.
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"lora_name":"a"}`, &a)
	assert.Equal(t, "0", a.OverlapBlocks.String())
	assert.NotEmpty(t, a.RequestID, "the router names requests without an id")

	// Load lifecycle.
	s.must(200, "POST", "/v1/requests/r1/prefill_done", "", nil)
	s.must(200, "DELETE", "/v1/requests/r1", "", nil)
	s.must(404, "DELETE", "/v1/requests/r1", "", nil)
	s.must(404, "POST", "/v1/requests/nope/prefill_done", "", nil)
}

func TestTwoModelsNeverShareBlocks(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"a"}`, nil)
	s.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"b"}`, nil)
	prompt := seqTokens(1, 16)
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, prompt, 10, core.Options{}), nil)

	var a routeAnswer
	s.must(200, "POST", "/v1/route", `{"model":"b","token_ids":`+tokensJSON(prompt)+`}`, &a)
	assert.Equal(t, "2", a.WorkerID.String(), "model b's only worker")
	assert.Equal(t, "0", a.OverlapBlocks.String(), "model a's blocks are not b's")
	require.Len(t, a.Candidates, 1)
	s.must(200, "POST", "/v1/route", `{"model":"a","token_ids":`+tokensJSON(prompt)+`}`, &a)
	assert.Equal(t, "4", a.OverlapBlocks.String())
}

// Dynamo's knobs (router_config_override) change Dynamo's cost: the
// router runs it when routing.policy is dynamo.
func TestOverrideChangesTheCost(t *testing.T) {
	cfg := testConfig()
	cfg.Routing.Policy = "dynamo"
	s := newTestServer(t, cfg)
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	prompt := seqTokens(1, 16) // 4 blocks, all cached on worker 1
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, prompt, 10, core.Options{}), nil)

	costOf := func(a routeAnswer, id string) string {
		for _, c := range a.Candidates {
			if c.WorkerID.String() == id {
				return c.Cost.String()
			}
		}
		return "absent"
	}
	var a routeAnswer
	// Defaults: worker 1 prefills nothing (4 - 4 credited) and decodes 4.
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"request_id":"a"}`, &a)
	assert.Equal(t, "1", a.WorkerID.String())
	assert.Equal(t, "4", costOf(a, "1"))
	assert.Equal(t, "8", costOf(a, "2"))
	s.must(200, "DELETE", "/v1/requests/a", "", nil)
	// No credit for cached blocks: worker 1 costs as much as worker 2.
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"request_id":"b",
		"router_config_override":{"overlap_score_credit":0}}`, &a)
	assert.Equal(t, "8", costOf(a, "1"))
	s.must(200, "DELETE", "/v1/requests/b", "", nil)
	// Prefill weighed double (Dynamo's deprecated name for the scale).
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,
		"router_config_override":{"overlap_score_weight":2}}`, &a)
	assert.Equal(t, "12", costOf(a, "2"))
}

// By default /v1/route scores by predicted TTFT: the worker holding the
// whole prompt is predicted faster, and explain shows each candidate's
// terms (the cached worker prefills nothing beyond the overhead; the
// cold one its 16 tokens at the prior's throughput).
func TestRouteExplainsPredictedTTFT(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	prompt := seqTokens(1, 16) // 4 blocks, all cached on worker 1
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, prompt, 10, core.Options{}), nil)

	type terms struct {
		QueueS, PrefillS, DecodeS, TotalS, TokensPerS float64
		CachedTokens                                  int `json:"cached_tokens"`
	}
	var a struct {
		WorkerID   uint64 `json:"worker_id"`
		Cost       float64
		Candidates []struct {
			WorkerID uint64 `json:"worker_id"`
			Cost     float64
			TTFT     *struct {
				QueueS       float64 `json:"queue_s"`
				PrefillS     float64 `json:"prefill_s"`
				DecodeS      float64 `json:"decode_s"`
				TotalS       float64 `json:"total_s"`
				TokensPerS   float64 `json:"tokens_per_s"`
				CachedTokens int     `json:"cached_tokens"`
			} `json:"ttft"`
		} `json:"candidates"`
	}
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`,"request_id":"a","explain":true}`, &a)
	assert.Equal(t, uint64(1), a.WorkerID, "the cached worker is predicted faster")
	require.Len(t, a.Candidates, 2)
	byWorker := map[uint64]terms{}
	for _, c := range a.Candidates {
		require.NotNil(t, c.TTFT, "explain carries the TTFT terms")
		byWorker[c.WorkerID] = terms{c.TTFT.QueueS, c.TTFT.PrefillS, c.TTFT.DecodeS, c.TTFT.TotalS, c.TTFT.TokensPerS, c.TTFT.CachedTokens}
		assert.InDelta(t, c.TTFT.QueueS+c.TTFT.PrefillS+c.TTFT.DecodeS, c.TTFT.TotalS, 1e-12, "total is the sum of the terms")
	}
	prior := route.DefaultTTFTPrior()
	assert.Equal(t, 16, byWorker[1].CachedTokens)
	assert.InDelta(t, prior.OverheadS, byWorker[1].PrefillS, 1e-12, "nothing to prefill but the overhead")
	assert.Equal(t, 0, byWorker[2].CachedTokens)
	assert.InDelta(t, prior.OverheadS+prior.SecondsPerKTok*16/1000, byWorker[2].PrefillS, 1e-12)
	assert.InDelta(t, 1000/prior.SecondsPerKTok, byWorker[2].TokensPerS, 1e-6, "an unseen rank runs on the prior")
	assert.Less(t, byWorker[1].TotalS, byWorker[2].TotalS)

	// Without explain, no terms.
	var plain map[string]any
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`}`, &plain)
	for _, c := range plain["candidates"].([]any) {
		assert.NotContains(t, c.(map[string]any), "ttft")
	}
}

func TestWorkersShowRanksAndCounters(t *testing.T) {
	s := newTestServer(t, testConfig())
	// 2^64-1 must survive the round trip exactly.
	s.must(201, "POST", "/v1/workers", `{"worker_id":18446744073709551615,"model":"m","dp_size":2}`, nil)
	s.must(200, "POST", "/v1/workers", `{"worker_id":18446744073709551615,"model":"m","dp_size":2}`, nil)
	s.must(200, "POST", "/v1/events?worker_id=18446744073709551615",
		`[`+storedEvent(t, 1, 1, nil, seqTokens(1, 8), 9007199254740993, core.Options{})+`,{"event_id":2,"data":{"removed":{"block_hashes":[42]}},"dp_rank":1}]`, nil)

	var out struct {
		Workers []struct {
			WorkerID json.Number `json:"worker_id"`
			DPSize   int         `json:"dp_size"`
			Ranks    []struct {
				DPRank     int                          `json:"dp_rank"`
				State      string                       `json:"state"`
				Blocks     json.Number                  `json:"blocks"`
				Events     map[string]map[string]uint64 `json:"events"`
				Skipped    map[string]uint64            `json:"skipped_blocks"`
				Violations map[string]uint64            `json:"violations"`
			} `json:"ranks"`
		} `json:"workers"`
	}
	s.must(200, "GET", "/v1/workers", "", &out)
	require.Len(t, out.Workers, 1)
	w := out.Workers[0]
	assert.Equal(t, "18446744073709551615", w.WorkerID.String())
	require.Len(t, w.Ranks, 2)
	r1 := w.Ranks[1]
	assert.Equal(t, 1, r1.DPRank)
	assert.Equal(t, "live", r1.State)
	assert.Equal(t, "2", r1.Blocks.String())
	assert.Equal(t, uint64(1), r1.Events["stored"]["applied"])
	assert.Contains(t, r1.Skipped, "block_size")
	assert.NotEmpty(t, r1.Violations)
	var total uint64
	for _, n := range r1.Violations {
		total += n
	}
	assert.Equal(t, uint64(1), total, "removing an unknown block is one violation")

	s.must(200, "GET", "/v1/workers/18446744073709551615", "", nil)
	s.must(200, "DELETE", "/v1/workers/18446744073709551615", "", nil)
	s.must(404, "DELETE", "/v1/workers/18446744073709551615", "", nil)
	s.must(404, "GET", "/v1/workers/18446744073709551615", "", nil)
}

func TestMetricsAndHealth(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, seqTokens(1, 8), 10, core.Options{}), nil)
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":[1,2,3,4]}`, nil)
	s.must(200, "GET", "/healthz", "", nil)
	s.must(200, "GET", "/readyz", "", nil)
	code, body := s.do("GET", "/metrics", "")
	require.Equal(t, 200, code)
	text := string(body)
	for _, want := range []string{
		`kvrouter_events_total{dp_rank="0",kind="stored",model="m",outcome="applied",tenant="",worker_id="1"} 1`,
		`kvrouter_index_blocks{model="m",tenant=""} 2`,
		`kvrouter_worker_state{dp_rank="0",model="m",state="live",tenant="",worker_id="1"} 1`,
		`kvrouter_route_duration_seconds_count 1`,
		`kvrouter_skipped_blocks_total{`,
		`kvrouter_stability_violations_total{`,
		`go_memstats_heap_alloc_bytes`,
		`kvrouter_http_requests_total{code="200",pattern="POST /v1/route"} 1`,
	} {
		assert.Contains(t, text, want)
	}
}

func TestReadyzWaitsForStart(t *testing.T) {
	srv, err := New(Options{Config: testConfig()})
	require.NoError(t, err)
	ts := &testServer{t: t, srv: srv}
	ts.ts = newHTTPTest(t, srv)
	var body struct {
		Status string          `json:"status"`
		Checks map[string]bool `json:"checks"`
	}
	ts.must(503, "GET", "/readyz", "", &body)
	assert.False(t, body.Checks["snapshot"])
	require.NoError(t, srv.Start())
	ts.must(200, "GET", "/readyz", "", &body)
	assert.Equal(t, "ready", body.Status)
	require.NoError(t, srv.Shutdown(t.Context()))
}

func TestPanicIsA500AndTheServerGoesOn(t *testing.T) {
	srv, err := New(Options{Config: testConfig()})
	require.NoError(t, err)
	h := srv.middleware(httpHandlerFunc(func() { panic("boom") }))
	rec := newRecorder()
	h.ServeHTTP(rec, newRequest(t, "GET", "/x"))
	assert.Equal(t, 500, rec.Code)
	assert.Contains(t, rec.Body.String(), `"type":"server_error"`)
	assert.Contains(t, rec.Body.String(), "boom")
	// The same server still answers.
	rec = newRecorder()
	srv.Handler().ServeHTTP(rec, newRequest(t, "GET", "/healthz"))
	assert.Equal(t, 200, rec.Code)
	assert.True(t, strings.Contains(rec.Body.String(), "ok"))
}
