package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// slowEngine answers every completion after hold, and counts the
// connections the proxy holds to it and the requests it serves at once.
type slowEngine struct {
	srv                   *httptest.Server
	conns, maxConns       atomic.Int64
	inflight, maxInflight atomic.Int64
	served                atomic.Int64
}

func raise(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func newSlowEngine(t testing.TB, hold time.Duration) *slowEngine {
	e := &slowEngine{}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // 200 at once
		}
		raise(&e.maxInflight, e.inflight.Add(1))
		defer e.inflight.Add(-1)
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(hold)
		e.served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"text_completion","choices":[{"text":"x"}],"usage":{"prompt_tokens":8,"completion_tokens":1}}`))
	}))
	e.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			raise(&e.maxConns, e.conns.Add(1))
		case http.StateClosed, http.StateHijacked:
			e.conns.Add(-1)
		}
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// Driven past its fleet's capacity, the proxy answers every request:
// what the engines can take is served, the rest gets a quick 429 with
// Retry-After; no engine gets more than its slots, descriptors stay
// bounded, and routing decisions stay fast throughout.
func TestOverloadIsAnswered429Quickly(t *testing.T) {
	const (
		engines, slots = 2, 4
		clients        = 64 // at once, each sending requests back to back
		perClient      = 40 // ~400 served (the p99's samples), the rest 429
		queueTimeout   = 150 * time.Millisecond
		hold           = 20 * time.Millisecond // an engine's answer
	)
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	var es []*slowEngine
	for i := range engines {
		e := newSlowEngine(t, hold)
		es = append(es, e)
		_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(i + 1), Model: "m", BaseURL: e.srv.URL})
		require.NoError(t, err)
	}
	rt, err := route.New(ix, route.Options{})
	require.NoError(t, err)
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, HealthInterval: -1,
		EngineSlots: slots, QueueLimit: 16, QueueTimeout: queueTimeout})
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	fdsBefore := openFDs(t)
	var (
		mu        sync.Mutex
		statuses  = map[int]int{}
		slow429   []time.Duration
		badBodies []string
		maxFDs    atomic.Int64
		wg        sync.WaitGroup
	)
	stopFD := make(chan struct{})
	fdDone := make(chan struct{})
	go func() { // descriptors, sampled while the load runs
		defer close(fdDone)
		for {
			raise(&maxFDs, int64(openFDs(t)))
			select {
			case <-stopFD:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perClient {
				pol := proxy.Policies[(c+k)%len(proxy.Policies)]
				body := fmt.Sprintf(`{"model":"m","prompt":[%d,2,3,4,5,6,7,8],"max_tokens":1}`, c*perClient+k)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(body))
				req.Header.Set(proxy.PolicyHeader, string(pol))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					badBodies = append(badBodies, "transport: "+err.Error())
					mu.Unlock()
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(t0)
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusTooManyRequests {
					var e struct {
						Error struct{ Message, Type, Code string } `json:"error"`
					}
					if json.Unmarshal(b, &e) != nil || e.Error.Code != "engines_saturated" || resp.Header.Get("Retry-After") == "" {
						badBodies = append(badBodies, string(b))
					}
					if took > queueTimeout+2*time.Second {
						slow429 = append(slow429, took)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stopFD)
	<-fdDone

	total := clients * perClient
	t.Logf("statuses %v; fds %d before, %d at most; engines' connections at most %d/%d, requests at once %d/%d",
		statuses, fdsBefore, maxFDs.Load(), es[0].maxConns.Load(), es[1].maxConns.Load(), es[0].maxInflight.Load(), es[1].maxInflight.Load())
	assert.Empty(t, badBodies, "every answer is a 200 or an OpenAI-shaped 429 with Retry-After")
	assert.Equal(t, total, statuses[http.StatusOK]+statuses[http.StatusTooManyRequests], "no request without an answer: %v", statuses)
	assert.Positive(t, statuses[http.StatusTooManyRequests], "past capacity, some are turned away")
	assert.Positive(t, statuses[http.StatusOK])
	assert.Empty(t, slow429, "a 429 comes within the queue's deadline")
	var served int64
	for i, e := range es {
		assert.LessOrEqual(t, e.maxInflight.Load(), int64(slots), "engine %d: never more than its slots at once", i)
		assert.LessOrEqual(t, e.maxConns.Load(), int64(slots), "engine %d: a bounded pool of connections", i)
		served += e.served.Load()
	}
	assert.Equal(t, int64(statuses[http.StatusOK]), served)
	// The test's own client holds up to `clients` connections, the server
	// side as many, the engines' pools engines*slots on each side.
	assert.LessOrEqual(t, maxFDs.Load(), int64(fdsBefore+2*clients+2*engines*slots+32), "descriptors stay bounded")
	snap := px.Stats().Snapshot()
	var rejected uint64
	for _, ps := range snap.Policies {
		rejected += ps.Rejected
	}
	assert.Equal(t, uint64(statuses[http.StatusTooManyRequests]), rejected)
	t.Logf("route p50 %.0f µs, p99 %.0f µs", snap.RouteP50Us, snap.RouteP99Us)
	// The decisions as the proxy reports them (X-Kvrouter-Route-Us, the
	// dashboard): a decision never waits behind the proxy's I/O or the
	// accounting of requests that end, and allocates next to nothing
	// (TestPickAllocatesAlmostNothing), so its p99 stays under a
	// millisecond with every engine saturated and the CPU too. Under the
	// race detector (make test's go-test, beside other packages' tests)
	// every memory access is checked and pauses of 30 ms were seen: there
	// the bound only catches decisions serialized behind many requests'
	// I/O (a dozen engine answers); the millisecond is checked by make
	// test's route-p99 step, this test alone without the detector.
	assert.Less(t, snap.RouteP50Us, float64(hold.Microseconds())/20, "route p50 (µs) with every engine saturated")
	p99Bound := 1000.0
	if raceDetector {
		p99Bound = float64(12 * hold.Microseconds())
	}
	assert.Less(t, snap.RouteP99Us, p99Bound, "route p99 (µs) with every engine saturated")
	assert.Zero(t, px.Waiting(), "the admission queue drains")
	assert.Zero(t, rt.Stats().ActiveRequests)
}

// BenchmarkRouteWhileSaturated: the routing decision's own latency while
// every engine is at its slots and the admission queue turns requests
// away (route-p50-µs, route-p99-µs; the bound is p99 < 1 ms).
func BenchmarkRouteWhileSaturated(b *testing.B) {
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(b, err)
	for i := range 4 {
		e := newSlowEngine(b, 5*time.Millisecond)
		_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: uint64(i + 1), Model: "m", BaseURL: e.srv.URL})
		require.NoError(b, err)
	}
	rt, err := route.New(ix, route.Options{})
	require.NoError(b, err)
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, HealthInterval: -1, EngineSlots: 4, QueueLimit: 32, QueueTimeout: 50 * time.Millisecond})
	require.NoError(b, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(`{"model":"m","prompt":[%d,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"max_tokens":1}`, n.Add(1)%64)
			resp, err := client.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.StopTimer()
	snap := px.Stats().Snapshot()
	b.ReportMetric(snap.RouteP50Us, "route-p50-µs")
	b.ReportMetric(snap.RouteP99Us, "route-p99-µs")
}

// An engine whose every slot is busy still answers its health checks: the
// checks do not wait for a slot's connection (they would time out, and a
// saturated engine would go out of rotation).
func TestSaturatedEngineStaysInRotation(t *testing.T) {
	e := newSlowEngine(t, 4*time.Second)
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m", BaseURL: e.srv.URL})
	require.NoError(t, err)
	rt, err := route.New(ix, route.Options{})
	require.NoError(t, err)
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, EngineSlots: 2,
		HealthInterval: 50 * time.Millisecond, HealthTimeout: time.Second, HealthFailures: 2})
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()
	px.Start()
	defer px.Close()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3,4,5]}`))
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	require.Eventually(t, func() bool { return e.inflight.Load() == 2 }, eventually, time.Millisecond, "both slots busy")
	// Health checks while saturated: one waiting for a slot's connection
	// would time out twice in this time (and take the engine out).
	time.Sleep(3 * time.Second)
	info, ok := ix.Worker(1)
	require.True(t, ok)
	assert.True(t, info.Healthy, "the saturated engine stays in rotation")
	wg.Wait()
}
