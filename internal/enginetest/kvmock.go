package enginetest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/kvmock"
)

// KVMock is an in-process kvmock engine's setup: how it names its blocks
// and how much it is sent.
type KVMock struct {
	HashAlgo, HashSeed string // --prefix-caching-hash-algo, PYTHONHASHSEED
	Unstable           bool   // a random root per process, as vLLM without a seed
	BlockSize          int
	// PromptBlocks is the length of each prompt sent, in full blocks; 0
	// sends none (an engine that publishes nothing).
	PromptBlocks int
}

// kvmockVocab bounds the token ids of the prompts sent.
const kvmockVocab = 1000

// promptEvery is the pause between prompts: a steady trickle of root
// stores without flooding the subscriber.
const promptEvery = 10 * time.Millisecond

// StartKVMock runs kvmock in-process publishing on loopback and, unless
// PromptBlocks is 0, sends it a fresh prompt (each a new root store) every
// 10 ms until the test ends. It returns the events endpoint.
func StartKVMock(t testing.TB, m KVMock) string {
	t.Helper()
	cfg := kvmock.DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize, cfg.VocabSize, cfg.MaxModelLen, cfg.Speedup = 256, m.BlockSize, kvmockVocab, 256, 1000
	cfg.HashAlgo, cfg.HashSeed, cfg.Unstable = m.HashAlgo, m.HashSeed, m.Unstable
	cfg.EventsEndpoint, cfg.StepInterval = "tcp://127.0.0.1:*", time.Millisecond
	s, err := kvmock.NewServer(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if n := m.PromptBlocks * m.BlockSize; n > 0 {
		wg.Go(func() { sendPrompts(ctx, s.Engine, n) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		assert.NoError(t, s.Close())
	})
	return "tcp://" + s.Publisher.EventsAddr().String()
}

// sendPrompts generates one token for a new n-token prompt every
// promptEvery until ctx ends; prompts never repeat (within the vocabulary's
// wrap-around), so each is a root store.
func sendPrompts(ctx context.Context, eng *kvmock.Engine, n int) {
	for i := 0; ctx.Err() == nil; i++ {
		prompt := make([]uint32, n)
		for j := range prompt {
			prompt[j] = uint32((i*n + j) % kvmockVocab)
		}
		_, _ = eng.Generate(ctx, kvmock.GenRequest{Prompt: prompt, MaxTokens: 1}, func(kvmock.Token, kvmock.Timings) error { return nil })
		select {
		case <-ctx.Done():
		case <-time.After(promptEvery):
		}
	}
}
