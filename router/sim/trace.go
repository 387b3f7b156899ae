package sim

import (
	"fmt"
	"time"

	"github.com/kvhash/kvhash/internal/mooncake"
	"github.com/kvhash/kvhash/router/engine"
)

// Token ids are drawn from [firstToken, vocab): clear of an engine's
// special ids, in a Llama-3-sized vocabulary.
const (
	firstToken = 256
	vocab      = 128_000
)

// appendTokens appends a request's prompt: each hash id's 512 tokens (a
// function of the id and the position alone), the last run cut to
// input_length - 512*(len(hash_ids)-1).
func appendTokens(dst []uint32, q *mooncake.Request[float64]) []uint32 {
	left := q.InputLength
	for _, id := range q.HashIDs {
		n := min(left, mooncake.BlockTokens)
		dst = appendRun(dst, id, n)
		left -= n
	}
	return dst
}

// appendRun appends the first n tokens of id's run. One mix gives two
// tokens, each mapped onto the vocabulary by a multiply-shift.
func appendRun(dst []uint32, id uint64, n int) []uint32 {
	const span = vocab - firstToken
	for i := 0; i < n; i += 2 {
		x := splitmix64(id<<8 | uint64(i/2))
		dst = append(dst, firstToken+uint32(uint64(uint32(x))*span>>32))
		if i+1 < n {
			dst = append(dst, firstToken+uint32((x>>32)*span>>32))
		}
	}
	return dst
}

// tokenRuns caches the runs of recently seen hash ids (a trace reuses its
// prefixes), at most capacity of them, the oldest dropped first: memory
// bounded, results identical to appendTokens.
type tokenRuns struct {
	capacity int
	runs     map[uint64][]uint32
	fifo     []uint64
	next     int
}

func newTokenRuns(capacity int) *tokenRuns {
	return &tokenRuns{capacity: capacity, runs: make(map[uint64][]uint32, capacity)}
}

// run returns id's whole run of 512 tokens (a request's last, cut run is
// its prefix: tokens depend on the id and the position alone).
func (c *tokenRuns) run(id uint64) []uint32 {
	if run, ok := c.runs[id]; ok {
		return run
	}
	run := appendRun(make([]uint32, 0, mooncake.BlockTokens), id, mooncake.BlockTokens)
	if len(c.fifo) < c.capacity {
		c.fifo = append(c.fifo, id)
	} else {
		delete(c.runs, c.fifo[c.next])
		c.fifo[c.next] = id
		c.next = (c.next + 1) % c.capacity
	}
	c.runs[id] = run
	return run
}

// appendTokens is the package's appendTokens through the cache.
func (c *tokenRuns) appendTokens(dst []uint32, q *mooncake.Request[float64]) []uint32 {
	return c.appendRange(dst, q, 0, q.InputLength)
}

// appendRange appends the prompt's tokens [from, to): a request's tokens
// are made again when needed (a stored block's event carries them), not
// kept while it is in flight.
func (c *tokenRuns) appendRange(dst []uint32, q *mooncake.Request[float64], from, to int) []uint32 {
	const bt = mooncake.BlockTokens
	for k := from / bt; k*bt < to && k < len(q.HashIDs); k++ {
		lo, hi := max(from, k*bt)-k*bt, min(to, (k+1)*bt)-k*bt
		dst = append(dst, c.run(q.HashIDs[k])[lo:hi]...)
	}
	return dst
}

// splitmix64 is a 64-bit mixer: distinct inputs give unrelated outputs.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// FleetPrefillCapacity is the fleet's prefill rate in tokens per second:
// per engine, a full step's token budget over that step's prefill time.
func FleetPrefillCapacity(cfg engine.Config, engines int) float64 {
	ms := cfg.Profile.PrefillMs(cfg.MaxNumBatchedTokens)
	return float64(engines) * float64(cfg.MaxNumBatchedTokens) / (ms / 1000)
}

// OfferedPrefillRate is the trace's prompt tokens per second at its own
// timestamps (every prompt token, cached or not).
func OfferedPrefillRate(reqs []mooncake.Request[float64]) (float64, error) {
	span, err := traceSpanS(reqs)
	if err != nil {
		return 0, err
	}
	tokens := 0
	for i := range reqs {
		tokens += reqs[i].InputLength
	}
	return float64(tokens) / span, nil
}

// OfferedWorkRate is the work the trace gives the fleet per second at its
// own timestamps after the best caching any router could earn, in prefill
// tokens (the unit of FleetPrefillCapacity): the prompt tokens the pooled
// LRU bound misses (b.PooledLRUMissTokens), plus every output token at
// DecodeTokenWork prefill tokens each. This is what a load is a fraction
// of (Config.Loads): at load 1.0 even an ideal router (the pooled cache's
// hits, perfect balance) keeps the fleet busy.
func OfferedWorkRate(reqs []mooncake.Request[float64], b Bounds, cfg engine.Config) (float64, error) {
	span, err := traceSpanS(reqs)
	if err != nil {
		return 0, err
	}
	output := 0
	for i := range reqs {
		output += reqs[i].OutputLength
	}
	return (float64(b.PooledLRUMissTokens) + float64(output)*DecodeTokenWork(cfg)) / span, nil
}

// decodeRefKVUse: the KV use at which a decode token is priced, the middle
// of the profile's range.
const decodeRefKVUse = 0.5

// DecodeTokenWork is what one output token costs an engine, in prefill
// tokens: a decode step at a full batch (max_num_seqs sequences) and half
// KV use advances each sequence by one token, so a token takes that step's
// time over the batch; a prefill token takes a full prefill step's time
// over its budget. For the mocker profile and defaults: 26.3 ms / 256 =
// 0.103 ms against 169 ms / 8,192 = 0.021 ms, 5.0 prefill tokens. (Steps
// that carry both pay both; this is the best an engine does on each.)
func DecodeTokenWork(cfg engine.Config) float64 {
	prefill := cfg.Profile.PrefillMs(cfg.MaxNumBatchedTokens) / float64(cfg.MaxNumBatchedTokens)
	decode := cfg.Profile.DecodeMs(decodeRefKVUse) / float64(cfg.MaxNumSeqs)
	if !(prefill > 0) {
		return 0
	}
	return decode / prefill
}

// traceSpanS is the time from the trace's first arrival to its last, in
// seconds.
func traceSpanS(reqs []mooncake.Request[float64]) (float64, error) {
	if len(reqs) < 2 {
		return 0, fmt.Errorf("%w: a load needs at least two requests", ErrConfig)
	}
	span := (reqs[len(reqs)-1].Timestamp - reqs[0].Timestamp) / 1000
	if !(span > 0) {
		return 0, fmt.Errorf("%w: the trace spans no time", ErrConfig)
	}
	return span, nil
}

// arrivals returns each request's arrival, from 0, with the trace's
// timestamps multiplied by stretch (whole trace, no subsampling).
func arrivals(reqs []mooncake.Request[float64], stretch float64) []time.Duration {
	out := make([]time.Duration, len(reqs))
	t0 := reqs[0].Timestamp
	for i := range reqs {
		out[i] = time.Duration((reqs[i].Timestamp - t0) * stretch * float64(time.Millisecond))
	}
	return out
}
