package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags may follow the tokens (issue 10, item 13: this said "(got 0)").
func TestCLIFlagsAnywhere(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"flags first", []string{"hash", "--block-size", "4", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}},
		{"flags last", []string{"hash", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "--block-size", "4"}},
		{"flags between", []string{"hash", "1", "2", "3", "4", "5", "6", "--block-size=4", "7", "8", "9", "10", "11", "12"}},
		{"after --", []string{"hash", "--block-size", "4", "--", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI("", tt.args...)
			require.Equal(t, exitOK, code, errOut)
			assert.Equal(t, publicOutput, out)
		})
	}
	// A bool flag after tokens takes no value; later tokens stay tokens.
	code, out, errOut := runCLI("", "hash", "1", "2", "3", "--eagle", "4", "5", "--block-size", "2")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"block_size":2`)
	code, eagleOut, _ := runCLI("", "hash", "--eagle", "--block-size", "2", "1", "2", "3", "4", "5")
	require.Equal(t, exitOK, code)
	assert.Equal(t, eagleOut, out)
	// After "--" a word that looks like a flag is a (bad) token.
	code, _, errOut = runCLI("", "hash", "--block-size", "4", "1", "--", "--eagle")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `token 1: "--eagle" is not an integer`)
}

// Plain decimal everywhere (issue 10, item 8: "016" meant 14, "08" failed).
func TestCLIPlainDecimal(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"block size with a leading zero", []string{"hash", "--block-size", "016", "1"}, `"016" has a leading zero`},
		{"block size 08", []string{"hash", "--block-size", "08", "1"}, `"08" has a leading zero`},
		{"block size in hex", []string{"hash", "--block-size", "0x10", "1"}, `"0x10" is not a decimal integer`},
		{"block size with a sign", []string{"hash", "--block-size", "+4", "1"}, `"+4" is not a decimal integer`},
		{"block size with underscores", []string{"hash", "--block-size", "1_6", "1"}, `"1_6" is not a decimal integer`},
		{"negative block size", []string{"hash", "--block-size", "-4", "1"}, `"-4" is negative`},
		{"huge block size", []string{"hash", "--block-size", "99999999999999999999", "1"}, "is above"},
		{"token with a leading zero", []string{"hash", "--block-size", "4", "1", "016"}, `token 1: "016" has a leading zero`},
		{"token in hex", []string{"hash", "--block-size", "4", "0x10"}, `token 0: "0x10" is not an integer`},
		{"stdin token with a leading zero", nil, `token 1: "07" has a leading zero`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, stdin := tt.args, ""
			if args == nil {
				args, stdin = []string{"hash", "--block-size", "4"}, "1 07 3"
			}
			code, out, errOut := runCLI(stdin, args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.wantErr)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}
	// "0" and "10" are plain decimal.
	code, out, errOut := runCLI("", "hash", "--block-size", "10", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `"block_size":10,"block_hashes":[`)
}

func TestCLIHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"}, {"-help"},
	} {
		code, out, errOut := runCLI("", args...)
		assert.Equal(t, exitOK, code, "%v", args)
		assert.Contains(t, out, "kvhash hash --block-size N", "%v", args)
		assert.Empty(t, errOut)
	}
	for _, cmd := range []string{"hash", "seed", "raw", "version"} {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}, {cmd, "1", "--help"}} {
			code, out, errOut := runCLI("", args...)
			assert.Equal(t, exitOK, code, "%v: %s", args, errOut)
			assert.True(t, strings.HasPrefix(out, "usage: kvhash "+cmd), "%v: %q", args, out)
			assert.Empty(t, errOut, "%v", args)
		}
	}
	code, _, errOut := runCLI("", "help", "frobnicate")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown command "frobnicate"`)

	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := runCLI("", args...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		assert.Regexp(t, `^kvhash \S+ \(hash spec v1\)\n$`, out)
	}
	code, _, errOut = runCLI("", "version", "x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "version takes no arguments")
}
