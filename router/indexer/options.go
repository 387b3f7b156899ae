package indexer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// Defaults of Options' zero fields.
const (
	DefaultDegradedSettle   = 30 * time.Second
	DefaultQuarantineSettle = 60 * time.Second
	// DefaultMaxRankBlocks is above any one GPU's KV cache in blocks: an
	// H200 (141 GB) serving a 0.5B model with an fp8 cache (about 6 KB a
	// token) holds about 1.3 million 16-token blocks.
	DefaultMaxRankBlocks = 1 << 22
)

// Options configure an Indexer. Only BlockSize is required.
type Options struct {
	// BlockSize is the router's block size in tokens: the size at which
	// token ids are hashed and prompts are matched. Stores of another
	// size are not indexed (SkipBlockSize).
	BlockSize int
	// Mode is core's stability mode for every index: ModeFromEnvironment
	// (the zero value) reads KVHASH_ENFORCE_ENGINE_HASH_STABILITY. Only
	// ModeEnforce quarantines.
	Mode core.Mode
	// IndexMedia lists the media indexed besides "GPU" and "" (not
	// sent), e.g. "CPU" to score host-memory blocks like GPU ones.
	// Compared case-sensitively, as engines send them.
	IndexMedia []string
	// DegradedSettle: how long after a lost gap a rank stays degraded at
	// least (see the package doc). Zero: DefaultDegradedSettle.
	DegradedSettle time.Duration
	// QuarantineSettle: how long a quarantined rank must apply events
	// without a violation to become live. Zero: DefaultQuarantineSettle.
	QuarantineSettle time.Duration
	// EngineHashSeeds are seeds (engines' PYTHONHASHSEED values) that
	// `engine_hash: auto` and seedless vLLM schemes try besides vLLM's
	// fixed default and "0".
	EngineHashSeeds []string
	// VerifyFirst root stores of each rank are verified (again after each
	// engine restart), then one in VerifyEvery. Zero: DefaultVerifyFirst,
	// DefaultVerifyEvery.
	VerifyFirst, VerifyEvery int
	// VerifyChained also verifies chained blocks from their parent's full
	// digest, kept per held block (about 48 bytes each): opt-in.
	VerifyChained bool
	// MaxRankBlocks bounds what one worker rank's events may make the
	// router keep: the blocks it holds in the index, and the hashes of its
	// blocks not indexed. A store that would take the rank beyond it is
	// refused whole (SkipRankFull). Zero: DefaultMaxRankBlocks. Raise it
	// for offload tiers indexed with IndexMedia (host memory holds more).
	MaxRankBlocks int
	// Replay is asked for a replay when a rank is quarantined; nil: none.
	// The serve layer wires it to the ingest subscriber.
	Replay ReplayRequester
	// Logger gets the once-per-worker warnings and state transitions;
	// nil: discarded. core's per-violation logs go to it too.
	Logger *slog.Logger
	// AwaitConnect: a rank of a worker with an endpoint shows as
	// StateConnecting, scored by load only, until its stream connects or
	// a batch of it arrives (set by a router that subscribes itself; a
	// replica fed by the event plane sees no connects of its own).
	AwaitConnect bool
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// ReplayRequester asks an engine rank's replay endpoint for the batches it
// still buffers from fromSeq on. It must not block for long: the indexer
// calls it from the stream's handler goroutine. The error is logged.
type ReplayRequester interface {
	RequestReplay(src ingest.Source, fromSeq uint64) error
}

// ReplayFunc adapts a function to ReplayRequester.
type ReplayFunc func(src ingest.Source, fromSeq uint64) error

// RequestReplay calls f.
func (f ReplayFunc) RequestReplay(src ingest.Source, fromSeq uint64) error { return f(src, fromSeq) }

// Errors the Indexer returns, wrapped with context.
var (
	ErrUnknownWorker = errors.New("unknown worker")
	ErrUnknownModel  = errors.New("unknown model")
	ErrInvalidWorker = errors.New("invalid worker")
	// ErrRankOutOfRange: an event names a dp_rank the worker does not
	// have (see Indexer.ApplyEvent and the package doc's Bounds).
	ErrRankOutOfRange = errors.New("dp_rank out of range")
	// ErrRankFull: a store would take a rank beyond Options.MaxRankBlocks.
	ErrRankFull = errors.New("worker rank holds too many blocks")
	// ErrInvalidLabel: a model, tenant or topic too long or not UTF-8.
	ErrInvalidLabel = errors.New("invalid label")
)

func (o Options) withDefaults() (Options, error) {
	if o.BlockSize <= 0 {
		return o, fmt.Errorf("indexer: block size is %d, must be at least 1", o.BlockSize)
	}
	if o.DegradedSettle <= 0 {
		o.DegradedSettle = DefaultDegradedSettle
	}
	if o.QuarantineSettle <= 0 {
		o.QuarantineSettle = DefaultQuarantineSettle
	}
	if o.VerifyFirst <= 0 {
		o.VerifyFirst = DefaultVerifyFirst
	}
	if o.VerifyEvery <= 0 {
		o.VerifyEvery = DefaultVerifyEvery
	}
	if o.MaxRankBlocks <= 0 {
		o.MaxRankBlocks = DefaultMaxRankBlocks
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}
