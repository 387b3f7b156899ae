package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mooncaketrace "github.com/kvhash/kvhash/data/mooncake"
	"github.com/kvhash/kvhash/router/demo"
)

// Bad demo flags exit 2 with a line naming the flag; help exits 0.
func TestDemoFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"help", []string{"demo", "-h"}, 0, "Usage: kvrouter demo"},
		{"unknown flag", []string{"demo", "--nope"}, 2, "flag provided but not defined"},
		{"bad policy", []string{"demo", "--policies", "kvrouter,fastest"}, 2, `policy "fastest"`},
		{"no engines", []string{"demo", "--engines", "0"}, 2, "--engines"},
		{"no speedup", []string{"demo", "--speedup", "0"}, 2, "--speedup"},
		{"unstable engine out of the fleet", []string{"demo", "--unstable-engine", "99"}, 2, "--unstable-engine"},
		{"unstable engine below -1", []string{"demo", "--unstable-engine", "-2"}, 2, "--unstable-engine"},
		{"no replicas", []string{"demo", "--replicas", "0"}, 2, "--replicas"},
		{"negative sample", []string{"demo", "--sample", "-1"}, 2, "--sample"},
		{"no blocks", []string{"demo", "--num-blocks", "0"}, 2, "--num-blocks"},
		{"no block size", []string{"demo", "--block-size", "0"}, 2, "--block-size"},
		{"nothing running", []string{"demo", "--max-running", "0"}, 2, "--max-running"},
		{"missing trace", []string{"demo", "--trace", "/nonexistent.jsonl"}, 1, "nonexistent"},
		{"missing kvmock", []string{"demo", "--trace", "", "--kvmock", "/nonexistent/kvmock"}, 1, "kvmock binary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			assert.Equal(t, tc.code, code, errb.String())
			assert.Contains(t, out.String()+errb.String(), tc.msg)
		})
	}
}

// A trace is subsampled by conversation, then cut to --requests.
func TestLoadTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, demo.WriteTrace(f, demo.GenerateTrace(200, 1)))
	require.NoError(t, f.Close())
	var out bytes.Buffer
	all, name, err := loadTrace(path, 1, 0, &out)
	require.NoError(t, err)
	assert.Equal(t, "t.jsonl", name)
	assert.Len(t, all, 200)
	half, _, err := loadTrace(path, 2, 0, &out)
	require.NoError(t, err)
	assert.Equal(t, demo.SampleFamilies(all, 2), half)
	assert.Contains(t, out.String(), "1 conversation in 2")
	few, _, err := loadTrace(path, 1, 10, &out)
	require.NoError(t, err)
	assert.Equal(t, all[:10], few)
}

// With no --trace the demo replays the vendored Mooncake trace from any
// directory (a user's clone has no ../shared); "generated" asks for a
// generated one.
func TestLoadTraceDefaultsToTheVendoredTrace(t *testing.T) {
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	reqs, name, err := loadTrace("", 1, 0, &out)
	require.NoError(t, err)
	assert.Contains(t, name, "vendored")
	vendored, err := mooncaketrace.Requests()
	require.NoError(t, err)
	assert.Len(t, reqs, 3993)
	assert.Equal(t, vendored, reqs)
	gen, name, err := loadTrace("generated", 1, 0, &out)
	require.NoError(t, err)
	assert.Equal(t, "generated", name)
	assert.Equal(t, demo.GenerateTrace(600, 1), gen)
}
