package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/kvhash/kvhash/router/config"
)

const usageHead = `kvrouter: the KV-aware router. It subscribes to engines' KV events,
keeps one index per model and answers which worker should serve a prompt
(POST /v1/route), proxies OpenAI completions to the engine it picks, and
serves Dynamo's standalone indexer's API. See docs/api/router.md.

Usage:
  kvrouter [flags]          serve (--block-size is required)
  kvrouter demo [flags]     kvrouter and a fleet of kvmock engines on this machine, a trace
                            replayed once per routing policy (what make run runs)
  kvrouter doctor --events tcp://HOST:PORT
                            one engine's KV events: are its block ids deterministic?
  kvrouter help             this text; kvrouter SUBCOMMAND -h: a subcommand's flags
  kvrouter --version        the build's version

Flags of kvrouter (every key of the --config file is one):
`

// printUsage writes kvrouter's usage: its subcommands, then its flags.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	config.PrintFlags("kvrouter", w)
}

// version is the module's version and the commit it was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "kvrouter (unknown version)"
	}
	v := "kvrouter " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += " (" + rev + modified + ")"
	}
	return v + " " + bi.GoVersion
}
