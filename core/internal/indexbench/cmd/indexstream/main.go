// Command indexstream makes the side-by-side index streams and replays
// them: kvhash's core.Index here, Dynamo's Rust trees in bench/dynamo.
//
//	indexstream gen [-trace FILE] [-out DIR]     write one .kvs stream per configuration
//	indexstream replay FILE                      replay through core.Index, print one JSON line
//	indexstream compare [-streams DIR] [-dynamo BIN] [-runs 7]
//	                                             alternate both sides, print medians and the
//	                                             medians of the ratios of adjacent runs
//
// gen reads the Mooncake trace (default ../shared/data/mooncake-synthetic-trace.jsonl
// from the repository root); when it is absent it says so and uses a
// generated trace of the same shape (SyntheticTrace), so the harness works
// anywhere. The stream format and the digest are documented in stream.go.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/kvhash/kvhash/core/internal/indexbench"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "replay":
		err = replay(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexstream:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: indexstream gen|replay|compare [flags] (see the package doc)")
	os.Exit(2)
}

// syntheticRequests is the size of the generated stand-in trace: about
// the real trace's 3,993 requests.
const syntheticRequests = 4000

func gen(args []string) error {
	fl := flag.NewFlagSet("gen", flag.ExitOnError)
	trace := fl.String("trace", "", "Mooncake-format trace (default $KVHASH_TRACE, else "+indexbench.DefaultTracePath+")")
	out := fl.String("out", "build/indexstreams", "directory for the .kvs files")
	passes := fl.Int("probe-passes", 5, "how many times each side times the probe queries")
	fl.Parse(args)
	path := *trace
	if path == "" {
		path = os.Getenv("KVHASH_TRACE")
	}
	path, err := indexbench.ResolveTracePath(path, ".")
	if err != nil {
		return err
	}
	reqs, err := indexbench.ReadTraceFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "indexstream: trace %s not found; using a generated trace of %d requests\n", path, syntheticRequests)
		reqs, err = indexbench.SyntheticTrace(1, syntheticRequests), nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	paths, err := indexbench.WriteStreams(reqs, indexbench.StreamConfigs(), *out, *passes)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

func replay(args []string) error {
	fl := flag.NewFlagSet("replay", flag.ExitOnError)
	profile := fl.String("cpuprofile", "", "write a CPU profile of the replay to this file")
	fl.Parse(args)
	args = fl.Args()
	if len(args) != 1 {
		return fmt.Errorf("replay takes one stream file")
	}
	s, err := indexbench.ReadStreamFile(args[0])
	if err != nil {
		return err
	}
	// The stream laid out for replaying, without pointers for the
	// collector to scan; the Stream itself is let go (PackedStream's doc).
	packed := indexbench.Pack(s)
	s = nil
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := packed.Replay()
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	line, err := indexbench.FiguresOf("kvhash", filepath.Base(args[0]), res).JSON()
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}
