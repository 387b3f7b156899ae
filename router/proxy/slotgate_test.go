package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/proxy"
	"github.com/kvhash/kvhash/router/route"
)

// Under policy kvrouter, once the engine runs MaxNumSeqs of the proxy's
// requests, the next ones wait in the proxy, and go together when
// SlotBatch slots are free: with 2 slots and batches of 2, the third and
// fourth requests reach the engine only after both running ones end.
// Without batching (SlotBatch 0) they reach it at once.
func TestFullEngineGetsItsRequestsInBatches(t *testing.T) {
	for _, batch := range []int{2, 0} {
		t.Run(fmt.Sprintf("slot batch %d", batch), func(t *testing.T) { testSlotBatch(t, batch) })
	}
}

func testSlotBatch(t *testing.T, batch int) {
	finish := make(chan struct{})
	var arrived atomic.Int32
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select { // each request runs until the test ends one
		case <-finish:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"text":"a"}]}`))
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
	px, err := proxy.New(proxy.Options{Indexer: ix, Router: rt, HealthInterval: -1,
		MaxNumSeqs: 2, SlotBatch: batch, EngineSlots: 8, QueueTimeout: time.Minute})
	require.NoError(t, err)
	srv := httptest.NewServer(px.Wrap(http.NotFoundHandler()))
	defer srv.Close()

	statuses := make(chan int, 4)
	send := func() {
		go func() {
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":[1,2,3,4,5]}`))
			if !assert.NoError(t, err) {
				statuses <- 0
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			statuses <- resp.StatusCode
		}()
	}
	waitArrived := func(n int32) {
		t.Helper()
		require.Eventually(t, func() bool { return arrived.Load() == n }, 5*time.Second, time.Millisecond)
	}
	stays := func(n int32) {
		t.Helper()
		assert.Never(t, func() bool { return arrived.Load() != n }, 100*time.Millisecond, 5*time.Millisecond)
	}
	send()
	send()
	waitArrived(2)
	send()
	send()
	if batch == 0 {
		waitArrived(4) // the engine queues them itself
		for range 4 {
			finish <- struct{}{}
			assert.Equal(t, http.StatusOK, <-statuses)
		}
		return
	}
	stays(2) // the engine is full: both wait in the proxy

	finish <- struct{}{} // one ends: one slot free, below the batch
	assert.Equal(t, http.StatusOK, <-statuses)
	stays(2)
	finish <- struct{}{} // two free: both go
	assert.Equal(t, http.StatusOK, <-statuses)
	waitArrived(4)

	finish <- struct{}{}
	finish <- struct{}{}
	assert.Equal(t, http.StatusOK, <-statuses)
	assert.Equal(t, http.StatusOK, <-statuses)
}
