package main

import (
	"encoding/hex"
	"encoding/json"
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

func runHash(args []string, in input, stdout io.Writer) error {
	fs := newFlagSet("hash")
	var blockSize decimalFlag
	fs.Var(&blockSize, "block-size", "tokens per block (required, at least 1; plain decimal)")
	lora := fs.String("lora", "", "LoRA adapter name")
	namespace := fs.String("namespace", "", "cache namespace (tenant salt)")
	eagle := fs.Bool("eagle", false, "hash EAGLE windows of block-size+1 tokens")
	tokenArgs, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case !blockSize.set:
		return usagef("--block-size is required (tokens per block, at least 1)")
	case blockSize.value <= 0:
		return usagef("--block-size must be at least 1 (got %d)", blockSize.value)
	}
	var tokens []uint32
	if len(tokenArgs) > 0 {
		tokens, err = parseTokenArgs(tokenArgs)
	} else {
		tokens, err = readTokens(in.open("tokens (a JSON array or whitespace-separated integers)"))
	}
	if err != nil {
		return err
	}
	opts := core.Options{LoraName: *lora, CacheNamespace: *namespace, Eagle: *eagle}
	local, seq, err := core.AppendBlockAndSequenceHashes([]uint64{}, []uint64{}, tokens, blockSize.value, opts)
	if err != nil {
		return usageError{err.Error()}
	}
	return writeJSON(stdout, hashOutput{core.SpecVersion, blockSize.value, local, seq})
}

func runSeed(args []string, stdout io.Writer) error {
	fs := newFlagSet("seed")
	lora := fs.String("lora", "", "LoRA adapter name")
	namespace := fs.String("namespace", "", "cache namespace (tenant salt)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("seed takes no arguments, got %q", rest[0])
	}
	return writeJSON(stdout, struct {
		Spec string `json:"spec"`
		Seed uint64 `json:"seed"`
	}{core.SpecVersion, core.Seed(*lora, *namespace)})
}

// runRaw hashes bytes as they are, to check an implementation's XXH3
// against published raw-bytes vectors.
func runRaw(args []string, in input, stdout io.Writer) error {
	fs := newFlagSet("raw")
	isHex := fs.Bool("hex", false, "DATA (or standard input) is hexadecimal")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var data []byte
	switch len(rest) {
	case 0:
		b, err := io.ReadAll(in.open("the bytes to hash"))
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		data = b
		if *isHex {
			data = []byte(strings.TrimSpace(string(b)))
		}
	case 1:
		data = []byte(rest[0])
	default:
		return usagef("raw takes one DATA argument, got %d", len(rest))
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

func runVersion(args []string, stdout io.Writer) error {
	rest, err := parseArgs(newFlagSet("version"), args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version takes no arguments, got %q", rest[0])
	}
	_, err = fmt.Fprintf(stdout, "kvhash %s (hash spec %s)\n", core.Version, core.SpecVersion)
	return err
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
