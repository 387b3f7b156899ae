// Command kvhash computes canonical KV-cache block hashes (spec v1) from
// the command line.
//
//	kvhash hash --block-size 16 [--lora NAME] [--namespace NS] [--eagle] [TOKENS...]
//	kvhash seed [--lora NAME] [--namespace NS]
//	kvhash raw [--hex] [DATA]
//	kvhash version
//
// Tokens come from the arguments or, when there are none, from standard
// input as a JSON array or whitespace-separated integers. Output is one
// JSON object with u64 values written as exact integers. Bad input exits
// with status 2 and one line on standard error.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  kvhash hash --block-size N [--lora NAME] [--namespace NS] [--eagle] [TOKENS...]
  kvhash seed [--lora NAME] [--namespace NS]
  kvhash raw [--hex] [DATA]
  kvhash version`

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // could not write the output
	exitUsage = 2 // bad arguments or input
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// usageError is a problem with what the user gave; it exits with exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "hash":
		err = runHash(rest, stdin, stdout)
	case "seed":
		err = runSeed(rest, stdout)
	case "raw":
		err = runRaw(rest, stdin, stdout)
	case "version":
		err = runVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
	default:
		err = usagef("unknown command %q (want hash, seed, raw or version)", cmd)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "kvhash:", err)
	if _, ok := err.(usageError); ok {
		return exitUsage
	}
	return exitError
}
