package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

// Options configure one live check.
type Options struct {
	// Endpoint is the engine's PUB endpoint (tcp://host:port); required.
	Endpoint string
	// Topic is the topic prefix subscribed to ("": every topic).
	Topic string
	// Duration bounds the wait; the check ends earlier once a rank is
	// unstable or every rank that sent a root store is verified. Zero: 5s.
	Duration time.Duration
	// EngineHash is what the engine is checked against: "auto" (or "")
	// or a scheme, optionally with its seed (see indexer.ParseEngineHash).
	EngineHash string
	// Seeds are extra seeds auto tries (the engine's PYTHONHASHSEED).
	Seeds []string
	// BlockSize is the router's block size, used only to report an engine
	// that runs another one. Zero: the engine's is not compared.
	BlockSize int
	// Logger gets the indexer's and subscriber's logs; nil discards.
	Logger *slog.Logger
}

// DefaultDuration is how long a check listens when Options.Duration is 0.
const DefaultDuration = 5 * time.Second

// RankReport is one engine rank's outcome.
type RankReport struct {
	DPRank     uint32
	EngineHash indexer.EngineHashInfo
	Batches    bool // a batch of the rank was handled
	Stores     uint64
	// OtherBlockSize: stores at a block size other than Options.BlockSize
	// were seen.
	OtherBlockSize bool
}

// Report is a check's outcome.
type Report struct {
	Endpoint string
	Topic    string
	Waited   time.Duration
	// Connected: the subscription connected to the endpoint (a ZeroMQ
	// handshake) at least once while the check listened.
	Connected bool
	Ranks     []RankReport // ranks that sent at least one batch, by rank
}

// Verdict is the engine's overall verdict: unstable when any rank is;
// verified when every rank that sent a root store is verified (and one
// did); else unverifiable when a rank is, else pending (nothing decided).
func (r Report) Verdict() indexer.Verdict {
	verified, unverifiable := 0, 0
	for _, rk := range r.Ranks {
		switch rk.EngineHash.Verdict {
		case indexer.VerdictUnstable:
			return indexer.VerdictUnstable
		case indexer.VerdictVerified:
			verified++
		case indexer.VerdictUnverifiable:
			unverifiable++
		}
	}
	switch {
	case unverifiable > 0:
		return indexer.VerdictUnverifiable
	case verified > 0:
		return indexer.VerdictVerified
	}
	return indexer.VerdictPending
}

const doctorWorker = 1

// Run subscribes to the engine and waits for verdicts (see Options). It
// fails only on bad options or when the subscription cannot be made; an
// engine that sends nothing gives a Report without ranks.
func Run(ctx context.Context, opts Options) (Report, error) {
	if opts.Endpoint == "" {
		return Report{}, errors.New("verify: no endpoint (want tcp://HOST:PORT)")
	}
	if _, err := indexer.ParseEngineHash(opts.EngineHash); err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	if opts.Duration <= 0 {
		opts.Duration = DefaultDuration
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bs := opts.BlockSize
	if bs <= 0 {
		bs = 1 << 20 // nothing is compared; the index stays empty
	}
	ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn, EngineHashSeeds: opts.Seeds, Logger: log})
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	if _, err := ix.AddWorker(indexer.WorkerSpec{WorkerID: doctorWorker, Model: "engine", Endpoint: opts.Endpoint,
		Topic: opts.Topic, EngineHash: opts.EngineHash}); err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	sub, err := ingest.New(ingest.Options{Handler: ix, Logger: log})
	if err != nil {
		return Report{}, fmt.Errorf("verify: %w", err)
	}
	defer sub.Close()
	if _, err := sub.Subscribe(ingest.Subscription{Model: "engine", WorkerID: doctorWorker, Endpoint: opts.Endpoint, Topic: opts.Topic}); err != nil {
		return Report{}, fmt.Errorf("verify: subscribe %s: %w", opts.Endpoint, err)
	}
	start := time.Now()
	deadline := time.NewTimer(opts.Duration)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	final := func() Report {
		rep := report(ix, opts, time.Since(start))
		rep.Connected = sub.Stats().Connects.Load() > 0
		return rep
	}
	for {
		rep := final()
		if decided(rep) {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return final(), nil
		case <-deadline.C:
			return final(), nil
		case <-tick.C:
		}
	}
}

// decided: a rank is unstable, or every rank that sent a root store is
// verified (and one did).
func decided(r Report) bool {
	verified := 0
	for _, rk := range r.Ranks {
		switch {
		case rk.EngineHash.Verdict == indexer.VerdictUnstable:
			return true
		case rk.EngineHash.Verdict == indexer.VerdictVerified:
			verified++
		case rk.EngineHash.RootStores > 0:
			return false
		}
	}
	return verified > 0
}

func report(ix *indexer.Indexer, opts Options, waited time.Duration) Report {
	rep := Report{Endpoint: opts.Endpoint, Topic: opts.Topic, Waited: waited}
	wi, ok := ix.Worker(doctorWorker)
	if !ok {
		return rep
	}
	for _, ri := range wi.Ranks {
		if !ri.HaveSeq {
			continue
		}
		var stores uint64
		for o := range indexer.NumOutcomes {
			stores += ri.Events[indexer.KindStored][o]
		}
		rep.Ranks = append(rep.Ranks, RankReport{
			DPRank: ri.Worker.DPRank, EngineHash: ri.EngineHash, Batches: true, Stores: stores,
			OtherBlockSize: opts.BlockSize > 0 && ri.Skipped[indexer.SkipBlockSize] > 0,
		})
	}
	return rep
}

// Fix returns the engine flags and settings that fix a verdict ("" for
// verified).
func Fix(v indexer.Verdict) string {
	switch v {
	case indexer.VerdictUnstable:
		return strings.Join([]string{
			"set PYTHONHASHSEED=0 (any one value) in the environment of every engine process, every rank and node;",
			"on vLLM use --prefix-caching-hash-algo sha256_cbor (or sha256): their default root is fixed since vLLM's NONE_HASH fix (upgrade an older vLLM), while xxhash and xxhash_cbor roots stay random without PYTHONHASHSEED;",
			"if the engine already runs a fixed seed, pass it: --engine-hash SCHEME:SEED or --seeds SEED",
		}, "\n     ")
	case indexer.VerdictUnverifiable:
		return strings.Join([]string{
			"name the engine's scheme and seed (--engine-hash SCHEME:SEED, e.g. xxhash:0), or send a request without a LoRA adapter;",
			"if its ids are random per process (no fixed PYTHONHASHSEED), restarting it (or a second engine of the model) and sending the same prompt shows it: then",
			"set PYTHONHASHSEED=0 on every engine process, or on vLLM use --prefix-caching-hash-algo sha256_cbor",
		}, "\n     ")
	case indexer.VerdictPending:
		return strings.Join([]string{
			"no root store was seen: send the engine a new prompt while the doctor listens;",
			"check --events (the engine's PUB endpoint) and --topic; vLLM publishes only with",
			`--kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557"}' and prefix caching on`,
		}, "\n     ")
	}
	return ""
}
