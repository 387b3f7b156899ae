package main

import (
	"fmt"
	"io"
)

const usage = `usage:
  kvhash hash --block-size N [--lora NAME] [--namespace NS] [--eagle] [TOKENS...]
  kvhash seed [--lora NAME] [--namespace NS]
  kvhash raw [--hex] [DATA]
  kvhash version            (also: kvhash --version)
  kvhash help [COMMAND]     (also: kvhash COMMAND --help)`

// commandHelp is each command's --help text.
var commandHelp = map[string]string{
	"hash": `usage: kvhash hash --block-size N [--lora NAME] [--namespace NS] [--eagle] [TOKENS...]

Computes the canonical KV-cache block hashes (spec v1) of a prompt's token
ids and prints {"spec","block_size","block_hashes","sequence_hashes"}.
Tokens are plain decimal integers from 0 to 4294967295, given as arguments
or, when there are none, on standard input as a JSON array or separated by
whitespace. Flags may come before or after the tokens; "--" ends the flags.

  --block-size N    tokens per block (required, at least 1)
  --lora NAME       LoRA adapter name (folded into the seed)
  --namespace NS    cache namespace, the tenant salt (folded into the seed)
  --eagle           hash EAGLE windows of N+1 tokens`,
	"seed": `usage: kvhash seed [--lora NAME] [--namespace NS]

Prints the XXH3 seed the options give: {"spec","seed"} (1337 without options).

  --lora NAME       LoRA adapter name
  --namespace NS    cache namespace, the tenant salt`,
	"raw": `usage: kvhash raw [--hex] [DATA]

Prints XXH3-64 with seed 1337 of DATA, or of standard input when DATA is
absent: {"spec","hash"}. For checking an XXH3 against raw-bytes vectors.

  --hex             DATA (or standard input) is hexadecimal`,
	"version": `usage: kvhash version

Prints kvhash's version and the hash spec it implements.`,
}

// printHelp writes the help of one command, or the overview.
func printHelp(w io.Writer, command string) error {
	text, ok := commandHelp[command]
	switch {
	case command == "":
		text = usage
	case !ok:
		return usagef("unknown command %q (want hash, seed, raw or version)", command)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}
