// Command kvhash computes canonical KV-cache block hashes (spec v1) from
// the command line.
//
//	kvhash hash --block-size 16 [--lora NAME] [--namespace NS] [--eagle] [TOKENS...]
//	kvhash seed [--lora NAME] [--namespace NS]
//	kvhash raw [--hex] [DATA]
//	kvhash version
//	kvhash help [COMMAND]
//
// Tokens come from the arguments or, when there are none, from standard
// input as a JSON array or whitespace-separated integers. Numbers are plain
// decimal everywhere (no sign, no base prefix, no leading zero). Output is
// one JSON object with u64 values written as exact integers. Bad input
// exits with status 2 and one line on standard error; --help exits 0.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // could not read the input or write the output
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
	in := input{r: stdin, stderr: stderr}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "hash":
		err = runHash(rest, in, stdout)
	case "seed":
		err = runSeed(rest, stdout)
	case "raw":
		err = runRaw(rest, in, stdout)
	case "version", "--version", "-version":
		err = runVersion(rest, stdout)
	case "help", "-h", "-help", "--help":
		switch len(rest) {
		case 0:
			err = printHelp(stdout, "")
		case 1:
			err = printHelp(stdout, rest[0])
		default:
			err = usagef("help takes at most one command, got %d", len(rest))
		}
	default:
		err = usagef("unknown command %q (want hash, seed, raw or version; see 'kvhash help')", cmd)
	}
	if errors.Is(err, errHelp) {
		err = printHelp(stdout, cmd)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "kvhash:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}
