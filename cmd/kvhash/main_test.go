package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The published vectors, through the CLI.
const publicOutput = `{"spec":"v1","block_size":4,` +
	`"block_hashes":[14643705804678351452,16777012769546811212,483935686894639516],` +
	`"sequence_hashes":[14643705804678351452,4945711292740353085,12583592247330656132]}` + "\n"

func runCLI(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLIHash(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"arguments", "", []string{"hash", "--block-size", "4", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}, publicOutput},
		{"JSON stdin", "[1,2,3,4,5,6,7,8,9,10,11,12]\n", []string{"hash", "--block-size=4"}, publicOutput},
		{"whitespace stdin", "1 2 3 4\n5 6 7 8\t9 10 11 12 13", []string{"hash", "--block-size", "4"}, publicOutput},
		{"no full block", "", []string{"hash", "--block-size", "16", "1", "2"}, `{"spec":"v1","block_size":16,"block_hashes":[],"sequence_hashes":[]}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(tt.stdin, tt.args...)
			require.Equal(t, exitOK, code, errOut)
			assert.Equal(t, tt.want, out)
			assert.Empty(t, errOut)
		})
	}
}

func TestCLIOptionsChangeHashes(t *testing.T) {
	hashes := func(args ...string) []uint64 {
		code, out, errOut := runCLI("", append([]string{"hash", "--block-size", "2"}, append(args, "1", "2", "3", "4", "5")...)...)
		require.Equal(t, exitOK, code, errOut)
		var got hashOutput
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		return got.BlockHashes
	}
	plain := hashes()
	require.Len(t, plain, 2)
	assert.NotEqual(t, plain, hashes("--lora", "a"))
	assert.NotEqual(t, plain, hashes("--namespace", "a"))
	assert.NotEqual(t, hashes("--lora", "a"), hashes("--namespace", "a"))
	assert.Len(t, hashes("--eagle"), 2, "5 tokens make (5-1)/2 eagle windows")
	assert.Equal(t, plain, hashes("--lora", ""), "an empty name is absent")
}

func TestCLIRawAndSeed(t *testing.T) {
	code, out, _ := runCLI("", "raw", "test data")
	require.Equal(t, exitOK, code)
	assert.Equal(t, `{"spec":"v1","hash":13226331709069118873}`+"\n", out)

	code, out, _ = runCLI("746573742064617461\n", "raw", "--hex")
	require.Equal(t, exitOK, code)
	assert.Equal(t, `{"spec":"v1","hash":13226331709069118873}`+"\n", out)

	code, out, _ = runCLI("", "seed")
	require.Equal(t, exitOK, code)
	assert.Equal(t, `{"spec":"v1","seed":1337}`+"\n", out)

	code, out, _ = runCLI("", "version")
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `^kvhash \S+ \(hash spec v1\)\n$`, out)
}

func TestCLIBadInput(t *testing.T) {
	tests := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{"no command", "", nil, "usage"},
		{"unknown command", "", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"block size 0", "", []string{"hash", "--block-size", "0", "1"}, "--block-size must be at least 1 (got 0)"},
		{"block size missing", "", []string{"hash", "1", "2"}, "--block-size is required"},
		{"block size not a number", "", []string{"hash", "--block-size", "x"}, `invalid value "x"`},
		{"not an integer", "", []string{"hash", "--block-size", "4", "1", "two"}, `token 1: "two" is not an integer`},
		{"negative argument", "", []string{"hash", "--block-size", "4", "-1"}, `token 0: "-1" is negative`},
		{"negative after a token", "", []string{"hash", "--block-size", "4", "1", "-5"}, `token 1: "-5" is negative`},
		{"above u32", "", []string{"hash", "--block-size", "4", "4294967296"}, `"4294967296" is above 4294967295`},
		{"fraction", "", []string{"hash", "--block-size", "4", "1.5"}, `"1.5" is not an integer`},
		{"bad JSON", "[1, 2", []string{"hash", "--block-size", "4"}, "not a JSON array of integers"},
		{"JSON with a string", `[1, "2"]`, []string{"hash", "--block-size", "4"}, `token 1: "\"2\"" is not an integer`},
		{"JSON negative", "[1, -2]", []string{"hash", "--block-size", "4"}, `token 1: "-2" is negative`},
		{"JSON trailing data", "[1] [2]", []string{"hash", "--block-size", "4"}, "data after the JSON array"},
		{"whitespace stdin junk", "1 2 x", []string{"hash", "--block-size", "4"}, `token 2: "x" is not an integer`},
		{"bad hex", "", []string{"raw", "--hex", "zz"}, "--hex"},
		{"unknown flag", "", []string{"hash", "--block-size", "4", "--colour"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(tt.stdin, tt.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out, "nothing on stdout on error")
			assert.Contains(t, errOut, tt.wantErr)
			if tt.args != nil {
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line on stderr: %q", errOut)
			}
		})
	}
}
