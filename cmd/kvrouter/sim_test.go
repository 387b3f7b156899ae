package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/mooncake"
)

// Bad sim flags exit 2 naming what is wrong; help exits 0.
func TestSimFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"help", []string{"sim", "-h"}, 0, "Usage: kvrouter sim"},
		{"unknown flag", []string{"sim", "--nope"}, 2, "flag provided but not defined"},
		{"bad policy", []string{"sim", "--policies", "kvrouter,fastest"}, 2, `policy "fastest"`},
		{"bad load", []string{"sim", "--load", "0.5,lots"}, 2, "--load"},
		{"negative load", []string{"sim", "--load", "-1"}, 2, "must be positive"},
		{"no engines", []string{"sim", "--engines", "0"}, 2, "engines 0"},
		{"missing trace", []string{"sim", "--trace", "/nonexistent.jsonl"}, 2, "nonexistent"},
		{"missing profile", []string{"sim", "--profile", "/nonexistent.json"}, 2, "nonexistent"},
		{"stray argument", []string{"sim", "extra"}, 2, `unexpected argument "extra"`},
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

// A small trace through the whole command: the table on stdout, progress
// on stderr, the files in --out.
func TestSimRuns(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	f, err := os.Create(trace)
	require.NoError(t, err)
	require.NoError(t, mooncake.Write(f, mooncake.Generate(3, mooncake.GenerateOptions{Requests: 60, RatePerSec: 10, SystemBlocks: 1, Tenants: 4, TenantBlocks: 2, MaxOutput: 20})))
	require.NoError(t, f.Close())
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sim", "--trace", trace, "--engines", "2", "--load", "0.5", "--policies", "kvrouter,sglang",
		"--block-size", "16", "--num-blocks", "2048", "--out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "bounds: infinite cache hit")
	assert.Contains(t, stderr.String(), "[2/2")
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	var res struct {
		Engines int `json:"engines"`
		Rows    []struct {
			Policy   string `json:"policy"`
			Requests int    `json:"requests"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, 2, res.Engines)
	require.Len(t, res.Rows, 2)
	assert.Equal(t, "kvrouter", res.Rows[0].Policy)
	assert.Equal(t, 60, res.Rows[0].Requests)
}
