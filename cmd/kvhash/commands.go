package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kvhash/kvhash/core"
)

type hashOutput struct {
	Spec           string   `json:"spec"`
	BlockSize      int      `json:"block_size"`
	BlockHashes    []uint64 `json:"block_hashes"`
	SequenceHashes []uint64 `json:"sequence_hashes"`
}

func runHash(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("hash")
	blockSize := fs.Int("block-size", 0, "tokens per block (required, at least 1)")
	lora := fs.String("lora", "", "LoRA adapter name")
	namespace := fs.String("namespace", "", "cache namespace (tenant salt)")
	eagle := fs.Bool("eagle", false, "hash EAGLE windows of block-size+1 tokens")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *blockSize <= 0 {
		return usagef("--block-size must be at least 1 (got %d)", *blockSize)
	}
	var tokens []uint32
	var err error
	if fs.NArg() > 0 {
		tokens, err = parseTokenArgs(fs.Args())
	} else {
		tokens, err = readTokens(stdin)
	}
	if err != nil {
		return err
	}
	opts := core.Options{LoraName: *lora, CacheNamespace: *namespace, Eagle: *eagle}
	local, seq, err := core.AppendBlockAndSequenceHashes([]uint64{}, []uint64{}, tokens, *blockSize, opts)
	if err != nil {
		return usageError{err.Error()}
	}
	return writeJSON(stdout, hashOutput{core.SpecVersion, *blockSize, local, seq})
}

func runSeed(args []string, stdout io.Writer) error {
	fs := newFlagSet("seed")
	lora := fs.String("lora", "", "LoRA adapter name")
	namespace := fs.String("namespace", "", "cache namespace (tenant salt)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("seed takes no arguments, got %q", fs.Arg(0))
	}
	return writeJSON(stdout, struct {
		Spec string `json:"spec"`
		Seed uint64 `json:"seed"`
	}{core.SpecVersion, core.Seed(*lora, *namespace)})
}

// runRaw hashes bytes as they are, to check an implementation's XXH3
// against published raw-bytes vectors.
func runRaw(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("raw")
	isHex := fs.Bool("hex", false, "DATA (or standard input) is hexadecimal")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var data []byte
	switch fs.NArg() {
	case 0:
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		data = b
		if *isHex {
			data = []byte(strings.TrimSpace(string(b)))
		}
	case 1:
		data = []byte(fs.Arg(0))
	default:
		return usagef("raw takes one DATA argument, got %d", fs.NArg())
	}
	if *isHex {
		decoded, err := hex.DecodeString(string(data))
		if err != nil {
			return usagef("--hex: %v", err)
		}
		data = decoded
	}
	return writeJSON(stdout, struct {
		Spec string `json:"spec"`
		Hash uint64 `json:"hash"`
	}{core.SpecVersion, core.RawHash(data)})
}

func runVersion(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "kvhash %s (hash spec %s)\n", core.Version, core.SpecVersion)
	return err
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by run
	return fs
}

// parseFlags turns flag errors into one-line usage errors, and names a
// negative token for what it is rather than as an unknown flag.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return usagef("see 'kvhash help'")
	}
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			return usagef("token %s is negative; tokens are integers from 0 to 4294967295", a)
		}
	}
	return usagef("%s: %v", fs.Name(), err)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
