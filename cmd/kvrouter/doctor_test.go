package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
)

// doctorEngine runs kvmock in-process on loopback, sending it a fresh
// one-block prompt every few milliseconds until the test ends; send false
// publishes nothing.
func doctorEngine(t *testing.T, algo, seed string, unstable, send bool) string {
	m := enginetest.KVMock{HashAlgo: algo, HashSeed: seed, Unstable: unstable, BlockSize: 16}
	if send {
		m.PromptBlocks = 1
	}
	return enginetest.StartKVMock(t, m)
}

func TestDoctorSubcommand(t *testing.T) {
	cases := []struct {
		name       string
		algo, seed string
		unstable   bool
		send       bool
		extra      []string
		code       int
		want       []string
	}{
		{"verified sha256_cbor default seed", "sha256_cbor", "vllm-none-hash", false, true, nil, 0,
			[]string{`rank 0: verified under vllm-sha256-cbor seed="vllm-none-hash"`, "verdict: verified"}},
		{"verified sha256 seed 0 named", "sha256", "0", false, true, []string{"--engine-hash", "sha256:0"}, 0,
			[]string{`verified under vllm-sha256 seed="0"`}},
		// A random root, one process: nothing shows the ids random (an
		// unknown scheme would look the same): unverifiable, exit 3.
		{"random root, one process", "sha256_cbor", "vllm-none-hash", true, true, []string{"--seconds", "2"}, 3,
			[]string{"rank 0: unverifiable", "verdict: unverifiable", "PYTHONHASHSEED=0", "--prefix-caching-hash-algo sha256_cbor"}},
		{"nothing seen", "sha256", "0", false, false, []string{"--seconds", "0.3"}, 3,
			[]string{"verdict: pending", "send the engine a new prompt"}},
		{"other block size noted", "sha256", "0", false, true, []string{"--block-size", "32"}, 0,
			[]string{"another size than --block-size"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := doctorEngine(t, tc.algo, tc.seed, tc.unstable, tc.send)
			var out, errOut bytes.Buffer
			args := append([]string{"doctor", "--events", ep, "--seconds", "20"}, tc.extra...)
			code := run(t.Context(), args, &out, &errOut)
			assert.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

// Nothing listening at --events: the doctor says it could not connect,
// not that no root store was seen.
func TestDoctorCannotConnect(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"doctor", "--events", "tcp://127.0.0.1:1", "--seconds", "0.5"}, &out, &errOut)
	assert.Equal(t, 3, code)
	assert.Contains(t, out.String(), "could not connect to tcp://127.0.0.1:1")
	assert.NotContains(t, out.String(), "no root store was seen")
	out.Reset()
	run(t.Context(), []string{"doctor", "--events", "tcp://127.0.0.1:1", "--seconds", "0.3", "--json"}, &out, &errOut)
	var rep struct {
		Connected bool   `json:"connected"`
		Fix       string `json:"fix"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	assert.False(t, rep.Connected)
	assert.Contains(t, rep.Fix, "could not connect")
}

func TestDoctorJSONAndUsage(t *testing.T) {
	ep := doctorEngine(t, "sha256", "0", false, true)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"doctor", "--events", ep, "--json"}, &out, &errOut), errOut.String())
	var rep struct {
		Verdict string `json:"verdict"`
		Ranks   []struct {
			Verdict, Scheme, Seed string
		} `json:"ranks"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	assert.Equal(t, "verified", rep.Verdict)
	require.NotEmpty(t, rep.Ranks)
	assert.Equal(t, "vllm-sha256", rep.Ranks[0].Scheme)
	assert.Equal(t, "0", rep.Ranks[0].Seed)

	for _, args := range [][]string{
		{"doctor"},
		{"doctor", "--events", ep, "--seconds", "0"},
		{"doctor", "--events", ep, "--engine-hash", "md5"},
		{"doctor", "--events", ep, "extra"},
		{"doctor", "--bogus"},
	} {
		errOut.Reset()
		assert.Equal(t, 2, run(t.Context(), args, &out, &errOut), "%v", args)
		assert.NotEmpty(t, errOut.String(), "%v says why", args)
	}
}
