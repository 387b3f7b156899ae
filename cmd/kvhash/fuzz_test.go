package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadTokens: any standard input gives tokens or a usage error, and
// tokens read back the same from their plain decimal form and as JSON.
func FuzzReadTokens(f *testing.F) {
	for _, seed := range []string{
		"", "1 2 3", "[1,2,3]", "\xEF\xBB\xBF[1]", "\xEF\xBB\xBF1 2", "1,2", "016", "-1", "4294967296",
		"[1] [2]", "[1, \"2\"]", "\t\n 7 \v 8", "[]", "0", "00", "+1", "1e3", "[01]",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tokens, err := readTokens(strings.NewReader(in))
		if err != nil {
			var ue usageError
			require.True(t, errors.As(err, &ue), "bad input is a usage error: %v", err)
			return
		}
		words := make([]string, len(tokens))
		for i, tok := range tokens {
			words[i] = strconv.FormatUint(uint64(tok), 10)
		}
		again, err := readTokens(strings.NewReader(strings.Join(words, " ")))
		require.NoError(t, err)
		require.Equal(t, len(tokens), len(again))
		for i := range tokens {
			require.Equal(t, tokens[i], again[i])
		}
		asJSON, err := readTokens(strings.NewReader("[" + strings.Join(words, ",") + "]"))
		require.NoError(t, err)
		require.Equal(t, len(tokens), len(asJSON))
	})
}

// FuzzArgs: any argument list exits 0, 1 or 2 without a panic, with
// nothing on stdout on error.
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{
		"hash --block-size 4 1 2 3 4", "hash 1 2 3 4 --block-size 4", "hash --block-size 016 1", "hash -h",
		"hash --block-size=4 -- --eagle", "seed --lora a", "raw --hex 00", "version", "--version", "help hash",
		"hash --block-size -4 1", "hash --eagle --block-size 2 1 2 3", "frobnicate",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		code, out, _ := runCLI("1 2 3 4", args...)
		require.Contains(t, []int{exitOK, exitError, exitUsage}, code)
		if code != exitOK {
			require.Empty(t, out)
		}
	})
}
