package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryIssuePolicyIsRegistered(t *testing.T) {
	assert.Equal(t, []string{KVRouter, Dynamo, LLMD, LLMDPrecise, SGLang, RoundRobin, Random, LeastLoaded}, Names())
	for _, n := range Names() {
		f := newFleet(t, 1)
		p, err := New(n, f.env(1))
		require.NoError(t, err, n)
		assert.Equal(t, n, p.Name())
	}
	_, err := New("nope", Env{})
	require.ErrorIs(t, err, ErrUnknownPolicy)
	assert.False(t, Known("nope"))
	assert.True(t, Known(SGLang))
}

func TestBaselines(t *testing.T) {
	rr, err := New(RoundRobin, Env{})
	require.NoError(t, err)
	rows := rowsOf(1, 2, 3)
	var got []int
	for range 5 {
		i, err := rr.Pick(&Query{}, rows)
		require.NoError(t, err)
		got = append(got, i)
	}
	assert.Equal(t, []int{0, 1, 2, 0, 1}, got)

	ll, err := New(LeastLoaded, Env{Seed: 3})
	require.NoError(t, err)
	rows[0].Tokens, rows[1].Tokens, rows[2].Tokens = 900, 100, 4000
	rows[1].Requests = 50 // requests do not matter: tokens do
	i, err := ll.Pick(&Query{}, rows)
	require.NoError(t, err)
	assert.Equal(t, 1, i)

	rnd, err := New(Random, Env{Seed: 5})
	require.NoError(t, err)
	seen := map[int]bool{}
	for range 200 {
		i, err := rnd.Pick(&Query{}, rows)
		require.NoError(t, err)
		seen[i] = true
	}
	assert.Len(t, seen, 3, "random reaches every worker")
}
