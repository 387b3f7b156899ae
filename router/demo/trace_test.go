package demo_test

import (
	"bytes"
	"slices"
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
	assert.NotEmpty(t, sampled)
	assert.Less(t, len(sampled), len(reqs))
}

// A request continues the conversation of the longest earlier turn it
// extends, not of its first hash_id: with one system prompt in every
// request, conversations are still told apart, and sampling keeps or
// drops each whole.
func TestConversationsSharingASystemPrompt(t *testing.T) {
	q := func(ids ...uint64) demo.Request { return demo.Request{HashIDs: ids, InputLength: 512 * len(ids)} }
	reqs := []demo.Request{
		q(0, 10, 11),         // A1
		q(0, 20),             // B1
		q(0, 10, 11, 12, 13), // A2: extends A1 whole
		q(0, 30, 31, 32),     // C1
		q(0, 20, 21),         // B2: extends B1 whole
		q(0, 10, 11, 12, 14), // A3: A2 but its last (partial) block, rewritten
		q(0, 30, 31, 40),     // C2: C1 but its last block
		q(0, 50),             // D1: only the system prompt in common
	}
	assert.Equal(t, []int{0, 1, 0, 2, 1, 0, 2, 3}, demo.Conversations(reqs))
	half := demo.SampleFamilies(reqs, 2)
	assert.Equal(t, []demo.Request{reqs[0], reqs[2], reqs[3], reqs[5], reqs[6]}, half, "conversations 0 and 2")
}

// On a trace whose every request shares its first block, the sample is
// about 1 in k of the requests, not all or nothing.
func TestSampleBySystemPromptTrace(t *testing.T) {
	reqs := conversationTrace(3000, 1)
	for _, k := range []int{2, 5, 10} {
		n := len(demo.SampleFamilies(reqs, k))
		assert.InDelta(t, float64(len(reqs))/float64(k), float64(n), 0.35*float64(len(reqs))/float64(k), "1 in %d", k)
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

// FuzzConversations: any trace gets one conversation a request, numbered
// in order of first appearance, and a request that repeats an earlier
// one's hash ids (two or more) continues its conversation.
func FuzzConversations(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 1, 2, 3, 0, 5})
	f.Add([]byte{7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		var reqs []demo.Request
		for i := 0; i+1 < len(b) && len(reqs) < 64; i += 2 {
			n := 1 + int(b[i])%4
			ids := make([]uint64, 0, n)
			for k := range n {
				ids = append(ids, uint64(b[i+1]%3)*10+uint64(k)*uint64(1+b[i]%2))
			}
			reqs = append(reqs, demo.Request{HashIDs: ids, InputLength: 512 * n})
		}
		conv := demo.Conversations(reqs)
		require.Len(t, conv, len(reqs))
		next := 0
		for i, c := range conv {
			require.LessOrEqual(t, c, next, "numbered in order of appearance")
			if c == next {
				next++
			}
			for j := range i {
				if len(reqs[i].HashIDs) >= 2 && slices.Equal(reqs[i].HashIDs, reqs[j].HashIDs) {
					require.Equal(t, conv[j], c, "a repeat continues its conversation")
				}
			}
		}
	})
}
