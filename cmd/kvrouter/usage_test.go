package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// kvrouter's help lists its subcommands and its flags, however asked;
// --version names the build.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, 0, run(context.Background(), args, &out, &errb), "%v: %s", args, errb.String())
		for _, want := range []string{"kvrouter demo", "kvrouter doctor", "--version", "-block-size", "-admission-queue"} {
			assert.Contains(t, out.String(), want, "%v", args)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var out, errb bytes.Buffer
		assert.Equal(t, 0, run(context.Background(), args, &out, &errb), "%v", args)
		assert.Regexp(t, `^kvrouter \S+.* go1\.`, out.String())
	}
}
