package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// While the engine has a prefill queued (HoldTokens 1: any), policy
// kvrouter holds new requests in the proxy; when the first token comes,
// the held requests go by highest response ratio: the short prompt that
// arrived second before the long one, then the long one. Each is
// answered, and the holds are counted.
func TestHeldRequestsGoByResponseRatio(t *testing.T) {
	firstToken := make(chan struct{})
	var mu sync.Mutex
	var order []int // prompt lengths as the engine receives them
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt []uint32 `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		order = append(order, len(body.Prompt))
		n := len(order)
		mu.Unlock()
		if n == 1 {
			select { // the first request's prefill lasts until the test ends it
			case <-firstToken:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer engine.Close()
	ix, err := indexer.New(indexer.Options{BlockSize: 4})
	require.NoError(t, err)
	_, err = ix.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m", BaseURL: engine.URL})
	require.NoError(t, err)
	params := route.DefaultParams()
	params.Cost = route.CostTTFT
	rt, err := route.New(ix, route.Options{Params: &params})
	require.NoError(t, err)
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, HealthInterval: -1, HoldTokens: 1, QueueTimeout: time.Minute})
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()

	send := func(tokens int) chan int {
		ids := make([]string, tokens)
		for i := range ids {
			ids[i] = fmt.Sprint(i + 1)
		}
		status := make(chan int, 1)
		go func() {
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"prompt":[`+strings.Join(ids, ",")+`]}`))
			if !assert.NoError(t, err) {
				status <- 0
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
			status <- resp.StatusCode
		}()
		return status
	}
	heldTotal := func() uint64 {
		for _, ps := range px.Stats().Snapshot().Policies {
			if ps.Policy == proxy.PolicyKV {
				return ps.Held
			}
		}
		return 0
	}
	first := send(8)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 1 }, 5*time.Second, time.Millisecond)
	long := send(400)
	require.Eventually(t, func() bool { return px.Held() == 1 }, 5*time.Second, time.Millisecond)
	short := send(8)
	require.Eventually(t, func() bool { return px.Held() == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(100 * time.Millisecond) // both have waited about as long: the ratio favours the short one
	mu.Lock()
	assert.Len(t, order, 1, "nothing reaches the engine while it is saturated")
	mu.Unlock()
	close(firstToken)
	for name, ch := range map[string]chan int{"first": first, "long": long, "short": short} {
		assert.Equal(t, http.StatusOK, <-ch, name)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int{8, 8, 400}, order)
	assert.Equal(t, uint64(2), heldTotal(), "kvrouter_proxy_held_total")
	assert.Zero(t, px.Held())
}
