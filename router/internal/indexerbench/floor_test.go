package indexerbench

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The floor server answers a /query with no match, as an index holding
// nothing would, and stops when its stdin ends.
func TestServeFloorAnswersUntilItsInputEnds(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- ServeFloor(inR, outW) }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	url := strings.TrimSpace(line)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)

	got, err := ask(t.Context(), url, Query{Body: []byte(`{"token_ids":[1,2,3]}`), BlockSize: 16})
	require.NoError(t, err)
	assert.Empty(t, got)

	require.NoError(t, inW.Close())
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the floor server did not stop when its input ended")
	}
}

// The query process asks the floor beside the indexer, at the same rate,
// and answers both stats.
func TestQueryClientAsksTheFloorBesideTheIndexer(t *testing.T) {
	indexer := httptest.NewServer(FloorHandler())
	floor := httptest.NewServer(FloorHandler())
	t.Cleanup(indexer.Close)
	t.Cleanup(floor.Close)
	q := Query{Body: []byte(`{"token_ids":[1,2,3]}`), BlockSize: 16}

	cases := []struct {
		name     string
		floorURL string
	}{
		{"with a floor", floor.URL},
		{"without", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			served := make(chan error, 1)
			go func() { served <- ServeQueryClient(inR, outW) }()
			go func() {
				_ = json.NewEncoder(inW).Encode(queryJob{URL: indexer.URL, FloorURL: tc.floorURL, Rate: 200, Queries: []Query{q}})
			}()
			out := bufio.NewReader(outR)
			line, err := out.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, queryClientReady+"\n", line)
			time.Sleep(200 * time.Millisecond)
			require.NoError(t, inW.Close())
			var res queryResult
			require.NoError(t, json.NewDecoder(out).Decode(&res))
			require.NoError(t, <-served)

			assert.Positive(t, res.Query.Sent)
			assert.Zero(t, res.Query.Failed)
			if tc.floorURL == "" {
				assert.Zero(t, res.Floor.Sent)
				return
			}
			assert.Positive(t, res.Floor.Sent)
			assert.Zero(t, res.Floor.Failed)
			assert.Positive(t, res.Floor.Max)
			// Same rate: the two counts differ by the floor's half-interval start at most.
			assert.InDelta(t, res.Query.Sent, res.Floor.Sent, 2)
		})
	}
}

// The idle floor asks the floor server alone at the query rate for the
// window, from the query process or from this one.
func TestIdleFloorAsksTheFloorAloneForTheWindow(t *testing.T) {
	var asked atomic.Int64
	floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		FloorHandler().ServeHTTP(w, r)
	}))
	t.Cleanup(floor.Close)
	q := Query{Body: []byte(`{"token_ids":[1,2,3]}`), BlockSize: 16}

	cases := []struct {
		name   string
		client func(t *testing.T) []string
	}{
		{"query process", queryClientArgv},
		{"in process", func(*testing.T) []string { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked.Store(0)
			st, err := IdleFloor(t.Context(), floor.URL, tc.client(t), []Query{q}, 100, 500*time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, st.Failed)
			// 100/s for 0.5 s: about 50, fewer on a slow machine, never
			// many more (no catch-up bursts).
			assert.InDelta(t, 45, st.Sent, 25)
			assert.Positive(t, st.Max)
			assert.GreaterOrEqual(t, st.Max, st.P99)
			assert.Equal(t, int64(st.Sent)+1, asked.Load(), "the window's queries and one warm-up, all to the floor")
		})
	}
}

func TestIdleFloorFailsWithoutAFloor(t *testing.T) {
	_, err := IdleFloor(t.Context(), "http://127.0.0.1:1", nil, []Query{{Body: []byte(`{}`), BlockSize: 16}}, 100, 100*time.Millisecond)
	assert.ErrorContains(t, err, "idle floor")
}

func TestIdleFloorLineGivesEveryWindow(t *testing.T) {
	line := IdleFloorLine([]QueryStats{
		{Max: 14200 * time.Microsecond, P99: 6100 * time.Microsecond},
		{Max: 1500 * time.Microsecond, P99: 700 * time.Microsecond},
	}, 10*time.Second)
	assert.Equal(t, "the floor server alone, nothing else running (2 windows of 10s at the query rate, before the first run and after the last): longest 14.2 ms, p99 6.10 ms; longest 1.5 ms, p99 0.70 ms", line)
}
