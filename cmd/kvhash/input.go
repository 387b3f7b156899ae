package main

import (
	"fmt"
	"io"
	"os"
)

// input is standard input, with what is needed to tell a user at a
// terminal that the command is waiting for it.
type input struct {
	r      io.Reader
	stderr io.Writer
}

// open returns the reader; when it is a terminal it first writes a
// one-line note saying what the command reads (what), so that a user who
// gave no arguments does not face a silent wait.
func (in input) open(what string) io.Reader {
	if f, ok := in.r.(*os.File); ok && isTerminal(f) {
		fmt.Fprintf(in.stderr, "kvhash: reading %s from standard input; end with Ctrl-D\n", what)
	}
	return in.r
}
