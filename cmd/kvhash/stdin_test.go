package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenList is 1..n written with sep between the numbers.
func tokenList(n int, sep string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, sep)
}

// Standard input has no line or word limit, and a word that is not a
// token is an error, never a silent end (issue 10, item 2: a 64 KiB
// bufio.Scanner limit turned `seq -s, 1 20000` into "block_hashes":[]).
func TestCLIStdinLargeInputs(t *testing.T) {
	want := func(t *testing.T, n int) string {
		code, out, errOut := runCLI(tokenList(n, " "), "hash", "--block-size", "4")
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, out, `"block_hashes":[1`)
		return out
	}
	t.Run("one comma-separated word of 108 KiB", func(t *testing.T) {
		in := tokenList(20000, ",")
		require.Greater(t, len(in), 64<<10)
		code, out, errOut := runCLI(in, "hash", "--block-size", "4")
		assert.Equal(t, exitUsage, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, `token 0: "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1"... (108893 bytes) is not an integer: separate tokens with spaces, or give a JSON array`)
		assert.Less(t, len(errOut), 300, "the message quotes only the start of the word")
	})
	t.Run("BOM then a compact JSON array", func(t *testing.T) {
		in := "\xEF\xBB\xBF[" + tokenList(20000, ",") + "]"
		code, out, errOut := runCLI(in, "hash", "--block-size", "4")
		require.Equal(t, exitOK, code, errOut)
		assert.Equal(t, want(t, 20000), out)
	})
	t.Run("BOM then whitespace-separated tokens", func(t *testing.T) {
		code, out, errOut := runCLI("\xEF\xBB\xBF"+tokenList(12, "\n"), "hash", "--block-size", "4")
		require.Equal(t, exitOK, code, errOut)
		assert.Equal(t, want(t, 12), out)
	})
	t.Run("one line of 20000 tokens", func(t *testing.T) {
		code, out, errOut := runCLI(tokenList(20000, " "), "hash", "--block-size", "4")
		require.Equal(t, exitOK, code, errOut)
		var got hashOutput
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		assert.Len(t, got.BlockHashes, 5000)
		assert.Len(t, got.SequenceHashes, 5000)
	})
	t.Run("a word of 100 KiB of digits", func(t *testing.T) {
		code, _, errOut := runCLI("1 "+strings.Repeat("9", 100<<10), "hash", "--block-size", "4")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "is above 4294967295")
	})
	t.Run("a BOM is accepted only at the start", func(t *testing.T) {
		code, _, errOut := runCLI("1 \xEF\xBB\xBF2", "hash", "--block-size", "4")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "token 1")
	})
}

// A read error exits 1 with a message, whatever was read before.
func TestCLIStdinReadError(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, r.Close()) // reading a closed file fails
	var out, errOut bytes.Buffer
	code := run([]string{"hash", "--block-size", "4"}, r, &out, &errOut)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "kvhash: read standard input:")

	out.Reset()
	errOut.Reset()
	code = run([]string{"raw"}, r, &out, &errOut)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut.String(), "kvhash: read standard input:")
}

// Input from a pipe or file gets no note on standard error.
func TestCLIStdinPipeHasNoNote(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString("1 2 3 4")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	defer r.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"hash", "--block-size", "4"}, r, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	assert.Empty(t, errOut.String())
	assert.Contains(t, out.String(), `"block_hashes":[14643705804678351452]`)
}
