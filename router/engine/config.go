package engine

import (
	"errors"
	"fmt"
)

// Config is one engine's shape. Start from DefaultConfig.
type Config struct {
	NumBlocks            int  // KV blocks
	BlockSize            int  // tokens per block
	MaxNumSeqs           int  // requests running at once
	MaxNumBatchedTokens  int  // tokens computed per step
	EnableChunkedPrefill bool // a prompt may be computed over several steps
	Profile              Profile
}

// DefaultConfig is Dynamo's mocker defaults (16,384 blocks of 64 tokens,
// 256 sequences, 8,192 tokens a step, chunked prefill) with its timing.
func DefaultConfig() Config {
	return Config{
		NumBlocks:            16384,
		BlockSize:            64,
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  8192,
		EnableChunkedPrefill: true,
		Profile:              DefaultProfile(),
	}
}

// Validate reports every bad setting at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.NumBlocks <= 0 {
		bad("num blocks %d: must be positive", c.NumBlocks)
	}
	if c.NumBlocks > maxBlocks {
		bad("num blocks %d: at most %d", c.NumBlocks, maxBlocks)
	}
	if c.BlockSize <= 0 {
		bad("block size %d: must be positive", c.BlockSize)
	}
	if c.MaxNumSeqs <= 0 {
		bad("max num seqs %d: must be positive", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens <= 0 {
		bad("max num batched tokens %d: must be positive", c.MaxNumBatchedTokens)
	}
	if err := c.Profile.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("profile %q: %w", c.Profile.Name, err))
	}
	return errors.Join(errs...)
}
