package main

import (
	"errors"
	"flag"
	"io"
	"strings"
)

// errHelp asks run to print the command's help and exit 0.
var errHelp = errors.New("help requested")

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by run
	return fs
}

// parseArgs parses flags wherever they stand among the positional
// arguments (`hash 1 2 3 4 --block-size 4` works as well as flags first)
// and returns the positional ones in order. A word that starts with '-'
// and a digit is a (negative) positional argument, not a flag, so that
// the token checks can name it; "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return append(positional, args[1:]...), nil
		case looksLikeFlag(a):
			// Parse just this run of flags (with their values): the flag
			// package would take a negative token after them for a flag.
			run := flagRun(fs, args)
			if err := fs.Parse(args[:run]); err != nil {
				if errors.Is(err, flag.ErrHelp) {
					return nil, errHelp
				}
				return nil, usagef("%s: %v", fs.Name(), err)
			}
			positional = append(positional, fs.Args()...)
			args = args[run:]
		default:
			positional = append(positional, a)
			args = args[1:]
		}
	}
	return positional, nil
}

// flagRun returns how many of args, from the first, are flags and their
// values: a flag that is not boolean and has no "=value" takes the next
// argument, whatever it looks like (so "--block-size -4" reaches the
// flag's own check).
func flagRun(fs *flag.FlagSet, args []string) int {
	i := 0
	for i < len(args) && looksLikeFlag(args[i]) && args[i] != "--" {
		name := strings.TrimLeft(args[i], "-")
		i++
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) {
			i++
		}
	}
	return min(i, len(args))
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func looksLikeFlag(a string) bool {
	return len(a) > 1 && a[0] == '-' && (a[1] < '0' || a[1] > '9')
}
