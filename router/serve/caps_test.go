package serve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/route"
)

// Issue 24 items 4 and 7 over HTTP: labels, dp_rank, a rank's block
// bound, the cost's overflow.

// metricValue returns the value of one exact series line of /metrics
// ("" when absent).
func (s *testServer) metricValue(series string) string {
	s.t.Helper()
	code, body := s.do("GET", "/metrics", "")
	require.Equal(s.t, 200, code)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// A 2 MB model name (it made every /metrics scrape 97 MB) is a 400 on
// every API that takes one, and never reaches /metrics.
func TestLongLabelsAreRefusedOnEveryAPI(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	big := strings.Repeat("m", 2<<20)
	cases := []struct {
		name, method, path, body string
		openAIShape              bool
	}{
		{"kvrouter worker model", "POST", "/v1/workers", `{"worker_id":2,"model":"` + big + `"}`, true},
		{"kvrouter worker tenant", "POST", "/v1/workers", `{"worker_id":2,"model":"m","tenant":"` + big + `"}`, true},
		{"kvrouter worker topic", "POST", "/v1/workers", `{"worker_id":2,"model":"m","topic":"` + big + `"}`, true},
		{"route model", "POST", "/v1/route", `{"model":"` + big + `","token_ids":[1,2,3,4]}`, true},
		{"route tenant", "POST", "/v1/route", `{"model":"m","tenant":"` + big + `","token_ids":[1,2,3,4]}`, true},
		{"route model, one byte over", "POST", "/v1/route", `{"model":"` + strings.Repeat("é", 128) + `x","token_ids":[1]}`, true},
		{"Dynamo register", "POST", "/register", `{"instance_id":3,"endpoint":"tcp://127.0.0.1:5557","model_name":"` + big + `","block_size":4}`, false},
		{"Dynamo register group", "POST", "/register", `{"instance_id":3,"endpoint":"tcp://127.0.0.1:5557","model_name":"m","routing_group":"` + big + `","block_size":4}`, false},
		{"Dynamo unregister", "POST", "/unregister", `{"instance_id":1,"model_name":"` + big + `"}`, false},
		{"Dynamo query", "POST", "/query", `{"token_ids":[1,2,3,4],"model_name":"` + big + `"}`, false},
		{"Dynamo query by hash", "POST", "/query_by_hash", `{"block_hashes":[1],"model_name":"` + big + `"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.do(tc.method, tc.path, tc.body)
			require.Equal(t, 400, code, "%.300s", body)
			require.Less(t, len(body), 1024, "the answer does not echo the label")
			if tc.openAIShape {
				assert.Contains(t, string(body), `"code":"invalid_label"`)
				assert.Contains(t, string(body), `"type":"invalid_request_error"`)
			} else {
				assert.Contains(t, string(body), `{"error":"invalid label: `)
			}
		})
	}
	code, metrics := s.do("GET", "/metrics", "")
	require.Equal(t, 200, code)
	assert.Less(t, len(metrics), 200<<10, "/metrics stays small")
	assert.NotContains(t, string(metrics), strings.Repeat("m", 300))
	assert.Equal(t, "7", s.metricValue(`kvrouter_rejected_labels_total{field="model"}`))
	assert.Equal(t, "3", s.metricValue(`kvrouter_rejected_labels_total{field="tenant"}`))
	assert.Equal(t, "1", s.metricValue(`kvrouter_rejected_labels_total{field="topic"}`))
	var out struct {
		Workers []struct {
			Model string `json:"model"`
		} `json:"workers"`
	}
	s.must(200, "GET", "/v1/workers", "", &out)
	assert.Len(t, out.Workers, 1, "nothing was registered")
}

// An HTTP event naming a dp_rank beyond the worker's dp_size is a 400 and
// creates no rank (one with dp_rank 2000 created rank 2000, and every
// answer listing ranks grew).
func TestHTTPEventsNamingARankTheWorkerLacks(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m","dp_size":2}`, nil)
	cases := []struct {
		name string
		body string
		code int
		want string
	}{
		{"rank 2000", storedEvent(t, 1, 2000, nil, seqTokens(1, 8), 10, core.Options{}), 400, `"code":"dp_rank_out_of_range"`},
		{"rank 2 in an array, refused whole", `[` + storedEvent(t, 1, 1, nil, seqTokens(1, 8), 20, core.Options{}) + `,` +
			storedEvent(t, 2, 2, nil, seqTokens(1, 8), 30, core.Options{}) + `]`, 400, "dp_size 2"},
		{"rank 1 of 2", storedEvent(t, 3, 1, nil, seqTokens(1, 8), 40, core.Options{}), 200, `"errors":[]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.do("POST", "/v1/events?worker_id=1", tc.body)
			require.Equal(t, tc.code, code, "%s", body)
			assert.Contains(t, string(body), tc.want)
		})
	}
	var w struct {
		Ranks []struct {
			DPRank int    `json:"dp_rank"`
			Blocks uint64 `json:"blocks"`
		} `json:"ranks"`
	}
	s.must(200, "GET", "/v1/workers/1", "", &w)
	require.Len(t, w.Ranks, 2)
	assert.Equal(t, uint64(2), w.Ranks[1].Blocks, "only the accepted request applied")
	assert.Equal(t, "3", s.metricValue(`kvrouter_refused_events_total{reason="dp_rank_out_of_range"}`))
}

// Twenty large posts cannot take a rank beyond its block bound: the index
// stays bounded and the refused events are counted.
func TestHTTPEventsBeyondTheRankBlockBound(t *testing.T) {
	const limit, perPost, posts = 2500, 1000, 20
	cfg := testConfig()
	cfg.Index.MaxRankBlocks = limit
	s := newTestServer(t, cfg)
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	refused := 0
	for i := range posts {
		code, body := s.do("POST", "/v1/events?worker_id=1",
			storedEvent(t, uint64(i), 0, nil, seqTokens(i*perPost*testBlockSize, perPost*testBlockSize), uint64(i*perPost+1), core.Options{}))
		if code == 400 {
			refused++
			assert.Contains(t, string(body), `"code":"rank_full"`)
			continue
		}
		require.Equal(t, 200, code, "%.300s", body)
	}
	assert.Equal(t, posts-limit/perPost, refused)
	assert.Equal(t, fmt.Sprint(limit/perPost*perPost), s.metricValue(`kvrouter_worker_blocks{dp_rank="0",model="m",tenant="",worker_id="1"}`))
	assert.Equal(t, fmt.Sprint(limit/perPost*perPost), s.metricValue(`kvrouter_index_blocks{model="m",tenant=""}`))
	assert.Equal(t, fmt.Sprint(refused), s.metricValue(`kvrouter_refused_events_total{reason="rank_full"}`))
}

// prefill_load_scale 1.7e308 with temperature 1 answered every cost as
// null; it is a 400 now, and the largest scale allowed answers numbers.
func TestRouteOverrideThatOverflowedTheCost(t *testing.T) {
	s := newTestServer(t, testConfig())
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	cases := []struct {
		name     string
		override string
		code     int
	}{
		{"the overflowing scale", `{"prefill_load_scale":1.7e308,"router_temperature":1}`, 400},
		{"the deprecated name", `{"overlap_score_weight":1.7e308,"router_temperature":1}`, 400},
		{"a temperature beyond the bound", `{"router_temperature":1e300}`, 400},
		{"the largest scale", `{"prefill_load_scale":1e6,"router_temperature":1}`, 200},
		{"a tiny temperature", `{"router_temperature":1e-310}`, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.do("POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(seqTokens(1, 4000))+
				`,"explain":true,"router_config_override":`+tc.override+`}`)
			require.Equal(t, tc.code, code, "%s", body)
			assert.NotContains(t, string(body), "null")
			if code == 400 {
				assert.Contains(t, string(body), `"code":"invalid_router_config_override"`)
				return
			}
			s.must(200, "DELETE", "/v1/requests/"+requestID(t, body), "", nil)
		})
	}
}

func requestID(t *testing.T, body []byte) string {
	t.Helper()
	var d struct {
		RequestID string `json:"request_id"`
	}
	require.NoError(t, jsonUnmarshalNumber(body, &d))
	return d.RequestID
}

// A config whose knobs are outside the bounds does not start.
func TestConfigKnobsOutsideTheBoundsDoNotStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *config.Config)
	}{
		{"prefill_load_scale 1.7e308", func(c *config.Config) { c.Routing.PrefillLoadScale = 1.7e308 }},
		{"temperature 1e7", func(c *config.Config) { c.Routing.Temperature = 1e7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.mutate(&cfg)
			_, err := New(Options{Config: cfg})
			require.ErrorIs(t, err, route.ErrInvalidParams)
		})
	}
}
