package serve

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/route"
)

func TestAppendDecisionIsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, 0.5, 1.0 / 3, 1e-7, 123456789.25, 1e21, 2.5e-300, -0.0, 7e22} {
		d := route.Decision{
			WorkerID: math.MaxUint64, DPRank: 3, OverlapBlocks: 9, Cost: f, RequestID: "r\"1\u2028<>&",
			Candidates: []route.Candidate{
				{WorkerID: 1, Cost: f, PrefillBlocks: f / 7, DecodeBlocks: 4, State: indexer.StateQuarantined},
				{WorkerID: 2, DPRank: 1, OverlapBlocks: 2, Cost: 3.75, State: indexer.StateLive},
			},
		}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		got := appendDecision(nil, &d, true)
		var a, b any
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &b), "%s", got)
		assert.Equal(t, a, b, "cost %v", f)
	}
	d := route.Decision{Candidates: []route.Candidate{}}
	assert.JSONEq(t, mustMarshal(t, d), string(appendDecision(nil, &d, true)))
	d.Candidates = []route.Candidate{{WorkerID: 1, Cost: 2, PrefillBlocks: 1, DecodeBlocks: 1}}
	assert.JSONEq(t, `{"worker_id":0,"dp_rank":0,"overlap_blocks":0,"cost":0,"request_id":"",
		"candidates":[{"worker_id":1,"dp_rank":0,"overlap_blocks":0,"cost":2,"state":"live"}]}`,
		string(appendDecision(nil, &d, false)), "without explain, no cost terms")
}

func mustMarshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// FuzzTokenList: the hand parser accepts what encoding/json accepts into
// []uint32, with the same values, and rejects the rest.
func FuzzTokenList(f *testing.F) {
	for _, s := range []string{`[]`, `[1,2,3]`, ` [ 0 , 4294967295 ] `, `[4294967296]`, `[-1]`, `[1.0]`, `[1e2]`, `null`, `["1"]`, `[01]`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want []uint32
		errWant := json.Unmarshal([]byte(s), &want)
		var got tokenList
		errGot := json.Unmarshal([]byte(s), &got)
		if errWant != nil {
			assert.Error(t, errGot, "%q", s)
			return
		}
		require.NoError(t, errGot, "%q", s)
		assert.Equal(t, want == nil, got == nil, "%q", s)
		assert.Equal(t, len(want), len(got))
		for i := range want {
			assert.Equal(t, want[i], got[i])
		}
	})
}
