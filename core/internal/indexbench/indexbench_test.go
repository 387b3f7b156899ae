package indexbench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallTrace writes a trace in the Mooncake format: multi-turn sessions
// whose requests extend the previous turn, plus a few shared system
// prompts, as the real trace has.
func smallTrace(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	next := uint64(0)
	fresh := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	system := [][]uint64{fresh(3), fresh(5)}
	var session []uint64
	for i := range n {
		if session == nil || rng.IntN(3) == 0 {
			session = append([]uint64(nil), system[rng.IntN(len(system))]...)
		}
		session = append(session, fresh(1+rng.IntN(3))...)
		ids := make([]string, len(session))
		for j, id := range session {
			ids[j] = fmt.Sprint(id)
		}
		input := TraceBlockTokens*(len(session)-1) + 1 + rng.IntN(TraceBlockTokens)
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 7, "hash_ids": [%s]}`+"\n",
			i*10, input, strings.Join(ids, ", "))
	}
	return b.Bytes()
}

func TestReadTrace(t *testing.T) {
	reqs, err := ReadTrace(bytes.NewReader(smallTrace(1, 20)))
	require.NoError(t, err)
	require.Len(t, reqs, 20)
	assert.Equal(t, int64(10), reqs[1].Timestamp)
	assert.Equal(t, 7, reqs[0].OutputLength)

	for in, want := range map[string]string{
		``:                                       "trace: no requests",
		`{"input_length": 10, "hash_ids": []}`:   "trace line 1: input_length 10 does not fit 0 hash ids",
		`{"input_length": 513, "hash_ids": [1]}`: "trace line 1: input_length 513 does not fit 1 hash ids",
		`{"input_length": 512, "hash_ids": [1, 2]}`:      "trace line 1: input_length 512 does not fit 2 hash ids",
		"\n{\"input_length\": \"x\", \"hash_ids\": [1]}": "trace line 2: json: cannot unmarshal",
	} {
		_, err := ReadTrace(strings.NewReader(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want)
	}
	_, err = ReadTraceFile("/nonexistent/trace.jsonl")
	require.Error(t, err)
}

func TestExpandSharesPrefixesLikeTheTrace(t *testing.T) {
	reqs := []Request{
		{InputLength: 1024, HashIDs: []uint64{1, 2}},
		{InputLength: 512 + 40, HashIDs: []uint64{1, 3}},
		{InputLength: 600, HashIDs: []uint64{2, 1}},
	}
	ps, err := Expand(reqs, 16)
	require.NoError(t, err)
	assert.Len(t, ps[0].Local, 64)
	assert.Len(t, ps[1].Local, 34, "the last hash id's partial block is dropped")
	assert.Equal(t, ps[0].Local[:32], ps[1].Local[:32])
	assert.Equal(t, ps[0].Seq[:32], ps[1].Seq[:32])
	assert.NotEqual(t, ps[0].Local[32], ps[1].Local[32])
	// Local hashes are position-independent, sequence hashes are not.
	assert.Equal(t, ps[0].Local[32:64], ps[2].Local[:32])
	assert.NotEqual(t, ps[0].Seq[32:64], ps[2].Seq[:32])

	tokens := HashIDTokens(1, nil)
	want, err := core.BlockHashes(append(tokens, HashIDTokens(2, nil)...), 16, core.Options{})
	require.NoError(t, err)
	assert.Equal(t, want, ps[0].Local)
	assert.Equal(t, core.SequenceHashes(want), ps[0].Seq)
	assert.Equal(t, tokens, HashIDTokens(1, nil), "deterministic")

	_, err = Expand(reqs, 48)
	require.Error(t, err)
}

func TestSimulateAndReplay(t *testing.T) {
	reqs, err := ReadTrace(bytes.NewReader(smallTrace(2, 300)))
	require.NoError(t, err)
	ps, err := Expand(reqs, 16)
	require.NoError(t, err)
	rec, err := Simulate(ps, 4, 300)
	require.NoError(t, err)
	assert.Positive(t, rec.Removed, "the caches are small enough to evict")
	assert.Positive(t, rec.Hits, "sessions reuse their prefixes")
	matched := 0
	for _, p := range ps {
		matched += len(p.Local)
	}
	assert.Equal(t, matched, rec.Matched, "every request is routed with its full prompt")

	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	res, err := Replay(x, ps, rec)
	require.NoError(t, err, "the engines' events never violate stability")
	assert.Equal(t, rec.Stored+rec.Removed+rec.Matched, res.BlockOps)
	assert.Equal(t, rec.Stored+rec.Removed, res.ApplyBlocks)
	assert.Len(t, res.MatchNanos, len(reqs))
	var blocks uint64
	for _, ws := range x.Stats().Workers {
		assert.LessOrEqual(t, ws.Blocks, uint64(300))
		blocks += ws.Blocks
	}
	assert.Equal(t, uint64(rec.Stored-rec.Removed), blocks)
	assert.Zero(t, x.Stats().Violations)
}

func TestResolveTracePath(t *testing.T) {
	p, err := ResolveTracePath("x.jsonl", ".")
	require.NoError(t, err)
	assert.Equal(t, "x.jsonl", p)
	p, err = ResolveTracePath("", ".")
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(p, "shared/data/mooncake-synthetic-trace.jsonl"), p)
	_, err = ResolveTracePath("", "/")
	require.Error(t, err)
}

func TestPercentile(t *testing.T) {
	s := []int64{5, 1, 4, 2, 3}
	assert.Equal(t, int64(1), Percentile(s, 0))
	assert.Equal(t, int64(3), Percentile(s, 50))
	assert.Equal(t, int64(5), Percentile(s, 100))
	assert.Zero(t, Percentile(nil, 50))
}
