package indexerbench

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
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
