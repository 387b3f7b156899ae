package epp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/epp"
	"github.com/kvhash/kvhash/router/serve"
)

// pickerOnly is a kvrouter with two registered workers (no engines: the
// picker only names them) and a picker over it, reached by a real gRPC
// client on loopback.
type pickerOnly struct {
	srv    *serve.Server
	client extprocv3.ExternalProcessorClient
	health healthpb.HealthClient
	addrs  []string // the workers' host:port
}

func startPickerOnly(t *testing.T, opts epp.Options) *pickerOnly {
	t.Helper()
	return startPicker(t, opts, false, nil)
}

// startPicker is startPickerOnly with the server's configuration changed
// by mutate first; with share, the picker's slots and admission are the
// server's proxy's, as kvrouter wires them.
func startPicker(t *testing.T, opts epp.Options, share bool, mutate func(*config.Config)) *pickerOnly {
	t.Helper()
	cfg := config.Default()
	cfg.BlockSize = blockSize
	cfg.Index.StabilityMode = "warn"
	po := &pickerOnly{}
	for i := range 2 {
		// A base_url that answers /health, so the proxy's poller keeps the
		// worker in rotation.
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		t.Cleanup(ts.Close)
		cfg.Workers = append(cfg.Workers, config.Worker{WorkerID: uint64(i + 1), Model: model, BaseURL: ts.URL})
		po.addrs = append(po.addrs, strings.TrimPrefix(ts.URL, "http://"))
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := serve.New(serve.Options{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	po.srv = srv
	if share {
		opts.Slots, opts.Admit = srv.Proxy(), srv.Proxy().Admit
		opts.Hold, opts.Kick = srv.Proxy().Hold, srv.Proxy().Kick
	}
	opts.Indexer, opts.Router, opts.Tokenize = srv.Indexer(), srv.Router(), srv.Proxy().PromptTokens
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	p, err := epp.New(opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(p.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	po.client, po.health = extprocv3.NewExternalProcessorClient(conn), healthpb.NewHealthClient(conn)
	return po
}

// exchange sends one request as Envoy does in mode (headers, then the
// body in one message) and returns the picker's answers up to the pick
// or an immediate response; the stream stays open until cancel.
func (po *pickerOnly) exchange(t *testing.T, mode filterv3.ProcessingMode_BodySendMode, path, body string, subset []string) ([]*extprocv3.ProcessingResponse, context.CancelFunc) {
	t.Helper()
	_, got, cancel := po.open(t, mode, path, body, subset)
	return got, cancel
}

// open is exchange with the stream, for the response path.
func (po *pickerOnly) open(t *testing.T, mode filterv3.ProcessingMode_BodySendMode, path, body string, subset []string) (extprocv3.ExternalProcessor_ProcessClient, []*extprocv3.ProcessingResponse, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := po.client.Process(ctx)
	require.NoError(t, err)
	first := &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			{Key: ":path", RawValue: []byte(path)}, {Key: ":method", RawValue: []byte("POST")},
		}}}},
	}
	if subset != nil {
		vals := make([]any, len(subset))
		for i, s := range subset {
			vals[i] = s
		}
		ns, err := structpb.NewStruct(map[string]any{"x-gateway-destination-endpoint-subset": vals})
		require.NoError(t, err)
		first.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb.subset_hint": ns}}
	}
	require.NoError(t, st.Send(first))
	var got []*extprocv3.ProcessingResponse
	if mode == filterv3.ProcessingMode_BUFFERED {
		r, err := st.Recv()
		require.NoError(t, err)
		got = append(got, r)
		if r.GetImmediateResponse() != nil {
			return st, got, cancel
		}
	}
	require.NoError(t, st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}}))
	for {
		r, err := st.Recv()
		require.NoError(t, err)
		got = append(got, r)
		if r.GetImmediateResponse() != nil || r.GetRequestBody() != nil {
			return st, got, cancel
		}
	}
}

// destination is the header an answer sets (or "").
func destination(r *extprocv3.ProcessingResponse) string {
	var cr *extprocv3.CommonResponse
	switch {
	case r.GetRequestHeaders() != nil:
		cr = r.GetRequestHeaders().GetResponse()
	case r.GetRequestBody() != nil:
		cr = r.GetRequestBody().GetResponse()
	}
	for _, h := range cr.GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == epp.DestinationHeader {
			return string(h.GetHeader().GetRawValue())
		}
	}
	return ""
}

func TestPickerAnswers(t *testing.T) {
	po := startPickerOnly(t, epp.Options{MaxBodyBytes: 4096})
	duplex, buffered := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_BUFFERED
	tokens := `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`
	for _, c := range []struct {
		name      string
		mode      filterv3.ProcessingMode_BodySendMode
		body      string
		subset    []string
		immediate int // 0: routed
	}{
		{"duplex routes token ids", duplex, tokens, nil, 0},
		{"buffered routes token ids", buffered, tokens, nil, 0},
		{"invalid JSON is a 400", duplex, `{"model":`, nil, 400},
		{"no model is a 400", buffered, `{"prompt":[1]}`, nil, 400},
		{"an unknown model is a 404", duplex, `{"model":"nope","prompt":[1,2]}`, nil, 404},
		{"a body over the cap is a 413", duplex, `{"model":"m","prompt":"` + strings.Repeat("a", 5000) + `"}`, nil, 413},
		{"an empty subset is a 503", duplex, tokens, []string{}, 503},
		{"an unregistered subset is a 503", buffered, tokens, []string{"10.0.0.1:8000"}, 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cancel := po.exchange(t, c.mode, "/v1/completions", c.body, c.subset)
			defer cancel()
			last := got[len(got)-1]
			if c.immediate != 0 {
				require.NotNil(t, last.GetImmediateResponse(), "%v", last)
				assert.Equal(t, c.immediate, int(last.GetImmediateResponse().GetStatus().GetCode()))
				assert.Contains(t, string(last.GetImmediateResponse().GetBody()), `"error"`)
				return
			}
			var dest string
			for _, r := range got {
				if d := destination(r); d != "" {
					dest = d
					md := r.GetDynamicMetadata().GetFields()[epp.MetadataNamespace].GetStructValue().GetFields()[epp.DestinationHeader].GetStringValue()
					assert.Equal(t, d, md, "header and envoy.lb metadata agree")
				}
			}
			assert.Contains(t, po.addrs, dest)
			if c.mode == duplex {
				// The headers' answer, then the body handed back whole.
				require.Len(t, got, 2)
				sr := got[1].GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
				assert.Equal(t, c.body, string(sr.GetBody()))
				assert.True(t, sr.GetEndOfStream())
			}
		})
	}
	t.Run("the subset hint narrows the pick", func(t *testing.T) {
		for _, a := range po.addrs {
			got, cancel := po.exchange(t, duplex, "/v1/chat/completions?x=1", `{"model":"m","messages":[]}`, []string{a})
			cancel()
			// Chat messages need /tokenize, which these stub workers lack:
			// the tokenizer's failure is answered, not a pick elsewhere.
			assert.NotNil(t, got[len(got)-1].GetImmediateResponse())
			got, cancel = po.exchange(t, duplex, "/v1/completions", tokens, []string{a})
			cancel()
			assert.Equal(t, a, destination(got[0]))
		}
	})
}

func TestPickerShedsWhenSaturated(t *testing.T) {
	po := startPickerOnly(t, epp.Options{MaxInFlightPerWorker: 1})
	duplex := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	body := `{"model":"m","prompt":[1,2,3]}`
	var open []context.CancelFunc
	seen := map[string]bool{}
	for range 2 {
		got, cancel := po.exchange(t, duplex, "/v1/completions", body, nil)
		open = append(open, cancel)
		seen[destination(got[0])] = true
	}
	assert.Len(t, seen, 2, "one request in flight on each worker")
	got, cancel := po.exchange(t, duplex, "/v1/completions", body, nil)
	cancel()
	require.NotNil(t, got[0].GetImmediateResponse())
	assert.Equal(t, 429, int(got[0].GetImmediateResponse().GetStatus().GetCode()))
	// A reset stream frees its worker: the next request is admitted.
	open[0]()
	require.Eventually(t, func() bool { return po.srv.Router().Stats().ActiveRequests == 1 }, 5*time.Second, 5*time.Millisecond)
	got, cancel = po.exchange(t, duplex, "/v1/completions", body, nil)
	defer cancel()
	assert.NotEmpty(t, destination(got[0]))
	open[1]()
}

// With kvrouter's wiring (no --epp-max-in-flight) the picker and the
// proxy share each engine's slots: a pick holds one until its response
// ends, the proxy sees it taken, and when every engine is full both
// front ends answer 429.
func TestPickerSharesTheProxysBackpressure(t *testing.T) {
	po := startPicker(t, epp.Options{}, true, func(c *config.Config) {
		c.Proxy.MaxNumSeqs, c.Proxy.EngineQueue = 1, 0 // one slot an engine
		c.Proxy.AdmissionTimeout = 50 * time.Millisecond
	})
	px := httptest.NewServer(po.srv.Proxy().Wrap(http.NotFoundHandler()))
	defer px.Close()
	proxied := func() int {
		resp, err := http.Post(px.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3]}`))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	duplex := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	body := `{"model":"m","prompt":[1,2,3]}`
	var open []context.CancelFunc
	for range 2 {
		got, cancel := po.exchange(t, duplex, "/v1/completions", body, nil)
		open = append(open, cancel)
		require.NotEmpty(t, destination(got[0]), "picked")
	}
	assert.Equal(t, map[uint64]int{1: 1, 2: 1}, po.srv.Proxy().Inflight(), "the picks hold the proxy's slots")
	assert.Equal(t, http.StatusTooManyRequests, proxied(), "the proxy finds every engine full")
	got, cancel := po.exchange(t, duplex, "/v1/completions", body, nil)
	cancel()
	require.NotNil(t, got[0].GetImmediateResponse())
	assert.Equal(t, 429, int(got[0].GetImmediateResponse().GetStatus().GetCode()), "so does the picker")
	// A pick's stream ends: its slot is the proxy's again.
	open[0]()
	require.Eventually(t, func() bool { return len(po.srv.Proxy().Inflight()) == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, http.StatusOK, proxied())
	open[1]()
	require.Eventually(t, func() bool { return len(po.srv.Proxy().Inflight()) == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestPickerAdmitHook(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"saturated is a 429", epp.ErrSaturated, 429},
		{"another refusal is a 503", context.DeadlineExceeded, 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			po := startPickerOnly(t, epp.Options{Admit: func(string) error { return c.err }})
			got, cancel := po.exchange(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, "/v1/completions", `{"model":"m","prompt":[1]}`, nil)
			defer cancel()
			assert.Equal(t, c.want, int(got[0].GetImmediateResponse().GetStatus().GetCode()))
		})
	}
}

func TestPickerHealth(t *testing.T) {
	po := startPickerOnly(t, epp.Options{})
	for _, svc := range []string{epp.HealthLiveness, epp.HealthReadiness, epp.ServiceName} {
		r, err := po.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err, svc)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, r.GetStatus(), svc)
	}
}

func TestPickerResponsePath(t *testing.T) {
	reg := prometheus.NewRegistry()
	po := startPickerOnly(t, epp.Options{Registerer: reg})
	for _, c := range []struct {
		name      string
		served    func(pick string) string // the endpoint the gateway reports
		elsewhere float64
	}{
		{"served where picked", func(p string) string { return p }, 0},
		{"served elsewhere is counted", func(string) string { return "10.1.2.3:8000" }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, got, cancel := po.open(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, "/v1/completions", `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18]}`, nil)
			defer cancel()
			pick := destination(got[0])
			require.Equal(t, 1, po.srv.Router().Stats().ActiveRequests)
			attrs, err := structpb.NewStruct(map[string]any{"upstream.address": c.served(pick)})
			require.NoError(t, err)
			require.NoError(t, st.Send(&extprocv3.ProcessingRequest{
				Attributes: map[string]*structpb.Struct{"envoy.filters.http.ext_proc": attrs},
				Request:    &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{}}},
			}))
			r, err := st.Recv()
			require.NoError(t, err)
			var added []string
			for _, h := range r.GetResponseHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
				added = append(added, h.GetHeader().GetKey()+"="+string(h.GetHeader().GetRawValue()))
			}
			assert.Contains(t, added, epp.HeaderEndpoint+"="+pick)
			// Cumulative over the cases, in order: 0, then 1.
			assert.Equal(t, c.elsewhere, counter(t, reg, "kvrouter_epp_served_elsewhere_total"))

			// The first chunk: prefill done; the chunk echoed back.
			require.NoError(t, st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
				ResponseBody: &extprocv3.HttpBody{Body: []byte("data: 1\n\n")}}}))
			r, err = st.Recv()
			require.NoError(t, err)
			assert.Equal(t, "data: 1\n\n", string(r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()))
			st0 := po.srv.Router().Stats()
			require.Len(t, st0.Workers, 1)
			assert.Zero(t, st0.Workers[0].PrefillTokens, "prefill done at the first chunk")
			assert.Equal(t, 1, st0.ActiveRequests, "still decoding")
			// The end of stream frees the load.
			require.NoError(t, st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
				ResponseBody: &extprocv3.HttpBody{Body: []byte("data: [DONE]\n\n"), EndOfStream: true}}}))
			r, err = st.Recv()
			require.NoError(t, err)
			assert.True(t, r.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream())
			assert.Equal(t, 0, po.srv.Router().Stats().ActiveRequests)
		})
	}
}

// counter reads a counter from a registry.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func TestPickerFallbacks(t *testing.T) {
	po := startPickerOnly(t, epp.Options{Fallbacks: 1})
	got, cancel := po.exchange(t, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, "/v1/completions", `{"model":"m","prompt":[1,2,3]}`, nil)
	defer cancel()
	parts := strings.Split(destination(got[0]), ",")
	require.Len(t, parts, 2, "the pick, then one fallback")
	assert.NotEqual(t, parts[0], parts[1])
	assert.ElementsMatch(t, po.addrs, parts)
}
