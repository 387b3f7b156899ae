package demo_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/demo"
)

func TestReadTrace(t *testing.T) {
	tests := []struct {
		name, in, err string
		n             int
	}{
		{"two lines", `{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [0, 1]}` + "\n\n" +
			`{"timestamp": 27, "input_length": 512, "output_length": 1, "hash_ids": [0]}`, "", 2},
		{"empty", "", "no requests", 0},
		{"not JSON", "{", "line 1", 0},
		{"no ids", `{"timestamp":0,"input_length":1,"output_length":1,"hash_ids":[]}`, "no hash_ids", 0},
		{"too long", `{"timestamp":0,"input_length":1025,"output_length":1,"hash_ids":[1,2]}`, "does not fit", 0},
		{"too short", `{"timestamp":0,"input_length":512,"output_length":1,"hash_ids":[1,2]}`, "does not fit", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, err := demo.ReadTrace(strings.NewReader(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, reqs, tc.n)
		})
	}
}

// Equal hash ids expand to equal tokens; the last block is cut to the
// input length; a generated trace reads back as written.
func TestExpanderAndGeneratedTrace(t *testing.T) {
	reqs := demo.GenerateTrace(50, 3)
	var buf bytes.Buffer
	require.NoError(t, demo.WriteTrace(&buf, reqs))
	back, err := demo.ReadTrace(&buf)
	require.NoError(t, err)
	require.Equal(t, reqs, back)

	e := demo.NewExpander(128256)
	a := e.Tokens(demo.Request{InputLength: 700, HashIDs: []uint64{5, 9}})
	b := demo.NewExpander(128256).Tokens(demo.Request{InputLength: 1024, HashIDs: []uint64{5, 9}})
	require.Len(t, a, 700)
	require.Len(t, b, 1024)
	assert.Equal(t, a, b[:700], "the same ids give the same tokens in another expander")
	c := e.Tokens(demo.Request{InputLength: 512, HashIDs: []uint64{6}})
	assert.NotEqual(t, a[:512], c)
	for _, tok := range b {
		require.GreaterOrEqual(t, tok, uint32(256))
		require.Less(t, tok, uint32(128256))
	}
	sampled := demo.SampleFamilies(reqs, 2)
	for _, q := range sampled {
		assert.Zero(t, q.HashIDs[0]%2)
	}
}

// A trace whose requests all share their first block (one system
// prompt): families are its conversations (the second id here), so
// sampling 1 in 2 keeps half of them, each whole.
func TestSampleFamiliesSkipsASharedFirstBlock(t *testing.T) {
	var reqs []demo.Request
	for conv := range 10 {
		for turn := range 3 {
			ids := []uint64{0, uint64(100 + conv)}
			for i := range turn {
				ids = append(ids, uint64(1000+conv*10+i))
			}
			reqs = append(reqs, demo.Request{InputLength: 512 * len(ids), HashIDs: ids})
		}
	}
	sampled := demo.SampleFamilies(reqs, 2)
	require.Len(t, sampled, 15, "5 conversations of 3 turns, not all 30 nor none")
	for _, q := range sampled {
		assert.Zero(t, q.HashIDs[1]%2, "whole conversations: the even ones")
	}
}

// FuzzReadTrace: any input is a trace or an error, and every request
// read expands to exactly its input length.
func FuzzReadTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [0, 1]}`))
	f.Add([]byte("{}\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		reqs, err := demo.ReadTrace(bytes.NewReader(b))
		if err != nil {
			return
		}
		e := demo.NewExpander(1000)
		for _, q := range reqs {
			if q.InputLength > 1<<16 {
				continue
			}
			require.Len(t, e.Tokens(q), q.InputLength)
		}
	})
}
