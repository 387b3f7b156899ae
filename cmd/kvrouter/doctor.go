package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/verify"
)

// Exit statuses of `kvrouter doctor`.
const (
	doctorVerified  = 0
	doctorUnstable  = 1
	doctorUsage     = 2
	doctorUndecided = 3 // nothing seen, or unverifiable
)

const doctorUsageText = `usage: kvrouter doctor --events tcp://HOST:PORT [--topic T] [--seconds 5]
                       [--engine-hash auto|SCHEME[:SEED]] [--seeds S1,S2] [--block-size N] [--json] [--verbose]

Subscribes to one engine's KV events and reports whether its block ids are
deterministic (verified, with the scheme and seed), unstable (a random root
per process) or undecided, with the engine flags that fix it. Send the engine
a new prompt while it listens. Exit status: 0 verified, 1 unstable,
3 nothing seen or unverifiable, 2 bad usage.
`

// runDoctor is `kvrouter doctor ...`.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kvrouter doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsageText); fs.PrintDefaults() }
	var opts verify.Options
	var seconds float64
	var seeds string
	var asJSON, verbose bool
	fs.StringVar(&opts.Endpoint, "events", "", "the engine's KV event endpoint (its ZeroMQ PUB socket), tcp://HOST:PORT")
	fs.StringVar(&opts.Topic, "topic", "", "topic prefix to subscribe to (empty: every topic)")
	fs.Float64Var(&seconds, "seconds", verify.DefaultDuration.Seconds(), "longest wait; ends earlier once decided")
	fs.StringVar(&opts.EngineHash, "engine-hash", "auto", "auto, or the engine's scheme (sha256, sha256_cbor, xxhash, xxhash_cbor, sglang-sha256, trtllm-v2-sha256, ...), optionally :SEED")
	fs.StringVar(&seeds, "seeds", "", "comma-separated extra seeds (the engine's PYTHONHASHSEED) that auto tries")
	fs.IntVar(&opts.BlockSize, "block-size", 0, "the router's block size, to report an engine that runs another (0: not compared)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&verbose, "verbose", false, "log the subscriber's and indexer's messages to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return doctorVerified
		}
		return doctorUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kvrouter doctor: unexpected argument %q\n", fs.Arg(0))
		return doctorUsage
	}
	if opts.Endpoint == "" {
		fmt.Fprintln(stderr, "kvrouter doctor: --events is required (the engine's tcp://HOST:PORT)")
		return doctorUsage
	}
	if !(seconds > 0) {
		fmt.Fprintf(stderr, "kvrouter doctor: --seconds %v: want > 0\n", seconds)
		return doctorUsage
	}
	opts.Duration = time.Duration(seconds * float64(time.Second))
	for s := range strings.SplitSeq(seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			opts.Seeds = append(opts.Seeds, s)
		}
	}
	if verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep, err := verify.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "kvrouter doctor: %v\n", err)
		return doctorUsage
	}
	if asJSON {
		writeDoctorJSON(stdout, rep)
	} else {
		writeDoctorText(stdout, rep)
	}
	switch rep.Verdict() {
	case indexer.VerdictVerified:
		return doctorVerified
	case indexer.VerdictUnstable:
		return doctorUnstable
	}
	return doctorUndecided
}

func writeDoctorText(w io.Writer, rep verify.Report) {
	fmt.Fprintf(w, "engine %s (topic %q), listened %.1fs\n", rep.Endpoint, rep.Topic, rep.Waited.Seconds())
	for _, rk := range rep.Ranks {
		eh := rk.EngineHash
		line := fmt.Sprintf("  rank %d: %s", rk.DPRank, eh.Verdict)
		if eh.Verdict == indexer.VerdictVerified {
			line += " under " + eh.Candidate().String()
		}
		line += fmt.Sprintf(" (%d root stores, %d checked, %d mismatched)", eh.RootStores, eh.Checked, eh.Mismatches)
		fmt.Fprintln(w, line)
		if eh.Reason != "" {
			fmt.Fprintf(w, "    %s\n", eh.Reason)
		}
		if rk.OtherBlockSize {
			fmt.Fprintln(w, "    note: the engine stores blocks of another size than --block-size: run the router with the engine's")
		}
	}
	v := rep.Verdict()
	fmt.Fprintf(w, "verdict: %s\n", v)
	if !rep.Connected {
		fmt.Fprintf(w, "could not connect to %s in %.1fs: is the engine up, and is that its KV events endpoint "+
			"(a ZeroMQ PUB socket: vLLM's kv-events-config \"endpoint\")? check the host, the port and a firewall\n",
			rep.Endpoint, rep.Waited.Seconds())
		return
	}
	if fix := verify.Fix(v); fix != "" {
		fmt.Fprintf(w, "fix: %s\n", fix)
	}
}

type doctorRankJSON struct {
	DPRank         uint32 `json:"dp_rank"`
	Verdict        string `json:"verdict"`
	Scheme         string `json:"scheme"`
	Seed           string `json:"seed"`
	Reason         string `json:"reason"`
	RootStores     uint64 `json:"root_stores"`
	Checked        uint64 `json:"checked"`
	Mismatches     uint64 `json:"mismatches"`
	OtherBlockSize bool   `json:"other_block_size"`
	Stores         uint64 `json:"stored_events"`
}

func writeDoctorJSON(w io.Writer, rep verify.Report) {
	ranks := make([]doctorRankJSON, 0, len(rep.Ranks))
	for _, rk := range rep.Ranks {
		eh := rk.EngineHash
		ranks = append(ranks, doctorRankJSON{DPRank: rk.DPRank, Verdict: eh.Verdict.String(), Scheme: string(eh.Scheme), Seed: eh.Seed,
			Reason: eh.Reason, RootStores: eh.RootStores, Checked: eh.Checked, Mismatches: eh.Mismatches,
			OtherBlockSize: rk.OtherBlockSize, Stores: rk.Stores})
	}
	v := rep.Verdict()
	fix := verify.Fix(v)
	if !rep.Connected {
		fix = "could not connect to " + rep.Endpoint + ": check that the engine is up and that this is its KV events endpoint"
	}
	out := map[string]any{"endpoint": rep.Endpoint, "topic": rep.Topic, "seconds": rep.Waited.Seconds(),
		"connected": rep.Connected, "verdict": v.String(), "fix": fix, "ranks": ranks}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
