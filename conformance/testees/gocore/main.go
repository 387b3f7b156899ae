// Command gocore is the conformance testee of the Go core: it answers the
// testee protocol (conformance/README.md) by calling package core.
//
// KVHASH_TESTEE_BREAK=seed|lora|index breaks it on purpose (the seed answer
// is off by one; a LoRA name gets an extra byte; find_matches tree sizes
// are off by one): the runner's own tests use it to prove that a wrong
// binding fails with a readable report.
package main

import (
	"fmt"
	"os"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

func main() {
	b := binding{breakMode: os.Getenv("KVHASH_TESTEE_BREAK")}
	if err := protocol.Serve(os.Stdin, os.Stdout, b); err != nil {
		fmt.Fprintln(os.Stderr, "gocore testee:", err)
		os.Exit(1)
	}
}
