package demo

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrontSpreadsCompletionsAndFansOutRegistrations: the replicas' front
// sends each completion to the next replica, a registry change to all
// (each with the whole body), and the rest to the first.
func TestFrontSpreadsCompletionsAndFansOutRegistrations(t *testing.T) {
	var mu sync.Mutex
	seen := map[int][]string{}
	var reps []*Router
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen[i] = append(seen[i], r.Method+" "+r.URL.Path+" "+string(body))
			mu.Unlock()
			_, _ = io.WriteString(w, "ok")
		}))
		t.Cleanup(srv.Close)
		reps = append(reps, &Router{URL: srv.URL})
	}
	f, err := newFront(reps)
	require.NoError(t, err)
	front := httptest.NewServer(f)
	t.Cleanup(front.Close)

	post := func(path, body string) int {
		resp, err := http.Post(front.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post("/v1/workers", `{"worker_id":1}`))
	for range 3 {
		require.Equal(t, http.StatusOK, post("/v1/completions", `{"prompt":"x"}`))
	}
	resp, err := http.Get(front.URL + "/v1/dashboard")
	require.NoError(t, err)
	_ = resp.Body.Close()

	for i := range 3 {
		assert.Contains(t, seen[i], `POST /v1/workers {"worker_id":1}`, "replica %d registers the worker", i+1)
		n := 0
		for _, s := range seen[i] {
			if strings.HasPrefix(s, "POST /v1/completions") {
				n++
			}
		}
		assert.Equal(t, 1, n, "replica %d serves one completion in three", i+1)
	}
	assert.Contains(t, seen[0], "GET /v1/dashboard ")
	assert.NotContains(t, seen[1], "GET /v1/dashboard ")
}
