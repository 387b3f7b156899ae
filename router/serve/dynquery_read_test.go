package serve

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/internal/benchalt"
)

var dynQuerySeeds = []string{
	`{"token_ids":[1,2,3,4,5,6,7,8],"model_name":"m","lora_name":"a","cache_salt":"s"}`,
	` { "token_ids" : [ 1 , 2 ] , "model_name" : "m" , "routing_group" : "g" , "tenant_id" : null } `,
	`{"token_ids":[],"model_name":"m"}`, `{"token_ids":null,"model_name":"m"}`, `{"token_ids":[1],"token_ids":null}`,
	`{"token_ids":[1],"model_name":"m","model_name":null}`, `{"token_ids":[4294967296],"model_name":"m"}`,
	`{"token_ids":[1.0],"model_name":"m"}`, `{"token_ids":[-0],"model_name":"m"}`, `{"token_ids":["1"],"model_name":"m"}`,
	`{"Token_IDs":[1],"model_name":"m"}`, `{"token_ids":[1],"model_name":"m\u00e9"}`, "{\"token_ids\":[1],\"model_name\":\"m\xff\"}",
	`{"token_ids":[1],"model_name":"m","extra":{"a":[1,{"b":null}]},"n":-1.5e3}`, `{"token_ids":[1],"model_name":"m"} x`,
	`{"token_ids":[1],"model_name":"m",}`, `{"token_ids":[1],"model_name":1}`, `[]`, `null`, ``, `{`, `{"token_ids":[[1]]}`,
	`{"token_ids":[1],"model_name":""}`, `{"token_ids":[1],"\u006dodel_name":"m"}`, `{"token_ids":[1],"x":[1,]}`,
}

// FuzzReadDynQuery: whatever readDynQuery takes, the encoding/json
// decoding it stands in for reads the same (oracleDecodeDynQuery).
func FuzzReadDynQuery(f *testing.F) {
	for _, s := range dynQuerySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := readDynQuery([]byte(body), make([]uint32, 0, 2))
		if !ok {
			return
		}
		want, err := oracleDecodeDynQuery([]byte(body))
		require.NoError(t, err, "taken by the one-pass reader: %q", body)
		require.Equal(t, want, got, "%q", body)
	})
}

// dynQueryFixture is a server with one worker of model "m" holding a
// prompt's blocks, and a handler of the old /query beside the new.
func dynQueryFixture(t testing.TB) (srv *Server, prompt []uint32) {
	s, err := New(Options{Config: testConfig()})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	h := s.Handler()
	post := func(path, body string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		require.Less(t, rec.Code, 300, "%s: %s", path, rec.Body.String())
	}
	post("/v1/workers", `{"worker_id":1,"model":"m"}`)
	prompt = seqTokens(1, 16)
	local, err := core.BlockHashes(prompt, testBlockSize, core.Options{})
	require.NoError(t, err)
	ev := core.Event{ID: 1, Kind: core.EventStored}
	for i, h := range local {
		ev.Blocks = append(ev.Blocks, core.StoredBlock{BlockHash: 100 + uint64(i), TokensHash: h})
	}
	b, err := ev.MarshalJSON()
	require.NoError(t, err)
	post("/v1/events?worker_id=1", string(b))
	return s, prompt
}

// FuzzDynQueryDifferential: any body to /query gets the answer the
// handler it replaced gives (oracleDynQuery): status and body.
func FuzzDynQueryDifferential(f *testing.F) {
	srv, _ := dynQueryFixture(f)
	h := srv.Handler()
	old := srv.dynamoHandler(srv.oracleDynQuery)
	for _, s := range dynQuerySeeds {
		f.Add(s)
	}
	f.Add(`{"token_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"model_name":"m"}`)
	f.Add(`{"token_ids":[1,2,3,4,5,6,7,8],"model_name":"m","cache_salt":"s","lora_name":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		h.ServeHTTP(got, httptest.NewRequest("POST", "/query", strings.NewReader(body)))
		old.ServeHTTP(want, httptest.NewRequest("POST", "/query", strings.NewReader(body)))
		require.Equal(t, want.Code, got.Code, "%q: %s", body, got.Body.String())
		require.Equal(t, want.Body.String(), got.Body.String(), "%q", body)
	})
}

func TestReadDynQueryEdges(t *testing.T) {
	s := func(v string) *string { return &v }
	tl := func(ids ...uint32) *tokenList { l := tokenList(append([]uint32{}, ids...)); return &l }
	for _, c := range []struct {
		name string
		body string
		fast bool
		want dynQueryRequest
	}{
		{"all fields", `{"token_ids":[1,2],"model_name":"m","routing_group":"g","tenant_id":"t","lora_name":"l","cache_salt":"c"}`, true,
			dynQueryRequest{TokenIDs: tl(1, 2), ModelName: s("m"), RoutingGroup: s("g"), TenantID: s("t"), LoraName: s("l"), CacheSalt: s("c")}},
		{"whitespace", " {\n\"token_ids\" : [ 4294967295 ,0 ]\t, \"model_name\":\"m\" } ", true,
			dynQueryRequest{TokenIDs: tl(4294967295, 0), ModelName: s("m")}},
		{"unknown fields ignored", `{"token_ids":[1],"model_name":"m","worker_id":7,"opts":{"a":[true,null,"x"]}}`, true,
			dynQueryRequest{TokenIDs: tl(1), ModelName: s("m")}},
		{"empty list is given", `{"token_ids":[],"model_name":"m"}`, true, dynQueryRequest{TokenIDs: tl(), ModelName: s("m")}},
		{"null is absent", `{"token_ids":[1],"token_ids":null,"model_name":"m","cache_salt":"c","cache_salt":null}`, true,
			dynQueryRequest{ModelName: s("m")}},
		{"escapes decoded", `{"token_ids":[1],"model_name":"m\u00e9\n"}`, true, dynQueryRequest{TokenIDs: tl(1), ModelName: s("mé\n")}},
		{"invalid UTF-8 replaced", "{\"token_ids\":[1],\"model_name\":\"m\xff\"}", true, dynQueryRequest{TokenIDs: tl(1), ModelName: s("m\uFFFD")}},
		// Left to encoding/json.
		{"key in another case", `{"TOKEN_IDS":[1],"model_name":"m"}`, false, dynQueryRequest{TokenIDs: tl(1), ModelName: s("m")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := readDynQuery([]byte(c.body), nil)
			assert.Equal(t, c.fast, ok, "taken by the one-pass reader")
			if ok {
				assert.Equal(t, c.want, got)
			}
			want, err := oracleDecodeDynQuery([]byte(c.body))
			require.NoError(t, err)
			assert.Equal(t, c.want, want, "what encoding/json reads")
		})
	}
}

// TestDynQueryAnswersAsBefore: the answers a client sees, errors
// included, are the old handler's, byte for byte.
func TestDynQueryAnswersAsBefore(t *testing.T) {
	srv, prompt := dynQueryFixture(t)
	h, old := srv.Handler(), srv.dynamoHandler(srv.oracleDynQuery)
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"token_ids":` + tokensJSON(prompt) + `,"model_name":"m"}`, 200},
		{`{"token_ids":` + tokensJSON(prompt) + `,"model_name":"m","cache_salt":"x","extra":1}`, 200},
		{`{"token_ids":[1],"model_name":""}`, 400},
		{`{"model_name":"m"}`, 422},
		{`{"token_ids":[1]}`, 422},
		{`{"token_ids":null,"model_name":"m"}`, 422},
		{`{"token_ids":[4294967296],"model_name":"m"}`, 422},
		{`{"token_ids":[1.5],"model_name":"m"}`, 422},
		{`{"token_ids":[1],"model_name":5}`, 422},
		{`[]`, 422},
		{`{"token_ids":[1],"model_name":"m",}`, 400},
		{`{"token_ids":[1],"model_name":"m"} {}`, 400},
		{``, 422}, // empty_body: not a syntax error to Dynamo's rules
	} {
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		h.ServeHTTP(got, httptest.NewRequest("POST", "/query", strings.NewReader(c.body)))
		old.ServeHTTP(want, httptest.NewRequest("POST", "/query", strings.NewReader(c.body)))
		assert.Equal(t, c.code, got.Code, "%s: %s", c.body, got.Body.String())
		assert.Equal(t, want.Code, got.Code, "%s", c.body)
		assert.Equal(t, want.Body.String(), got.Body.String(), "%s", c.body)
	}
}

// dynQueryBody is a /query body of n token ids in a tokenizer's range.
func dynQueryBody(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 3))
	var b strings.Builder
	b.WriteString(`{"token_ids":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, r.IntN(128256))
	}
	b.WriteString(`],"model_name":"meta-llama/Llama-3.1-8B-Instruct","routing_group":"default","lora_name":null}`)
	return []byte(b.String())
}

// BenchmarkParseQuery: the /query body parse against the encoding/json
// decoding it replaced, alternated within each run (new/old below 1:
// faster).
func BenchmarkParseQuery(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"512-tokens", 512}, {"4k-tokens", 4096}, {"8k-tokens", 8192}} {
		n, body := c.n, dynQueryBody(c.n)
		b.Run(c.name, func(b *testing.B) {
			buf := make([]uint32, 0, n)
			benchalt.Run(b, func() {
				if _, ok := readDynQuery(body, buf); !ok {
					b.Fatal("not taken")
				}
			}, func() {
				if _, err := oracleDecodeDynQuery(body); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkParseRoute: POST /v1/route's body, read by its one-pass path
// (fastroute.go, older than the /query one) against encoding/json
// (decodeStrict), alternated: the route path's figure beside /query's.
func BenchmarkParseRoute(b *testing.B) {
	r := rand.New(rand.NewPCG(8192, 4))
	var sb strings.Builder
	sb.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","token_ids":[`)
	for i := range 8192 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, r.IntN(128256))
	}
	sb.WriteString(`],"request_id":"r-1"}`)
	body := []byte(sb.String())
	buf := make([]uint32, 0, 8192)
	b.Run("8k-tokens", func(b *testing.B) {
		benchalt.Run(b, func() {
			if _, ok := fastRouteRequestInto(body, buf); !ok {
				b.Fatal("not taken")
			}
		}, func() {
			var req routeRequest
			if err := decodeStrict(body, &req); err != nil {
				b.Fatal(err)
			}
		})
	})
}
