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
// input_length - 512*(len(hash_ids)-1). One mix gives two tokens, each
// mapped onto the vocabulary by a multiply-shift (no division).
func appendTokens(dst []uint32, q *mooncake.Request[float64]) []uint32 {
	const span = vocab - firstToken
	left := q.InputLength
	for _, id := range q.HashIDs {
		n := min(left, mooncake.BlockTokens)
		for i := 0; i < n; i += 2 {
			x := splitmix64(id<<8 | uint64(i/2))
			dst = append(dst, firstToken+uint32(uint64(uint32(x))*span>>32))
			if i+1 < n {
				dst = append(dst, firstToken+uint32((x>>32)*span>>32))
			}
		}
		left -= n
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
// timestamps (all prompt tokens: cache hits are the policies' to earn).
func OfferedPrefillRate(reqs []mooncake.Request[float64]) (float64, error) {
	if len(reqs) < 2 {
		return 0, fmt.Errorf("%w: a load needs at least two requests", ErrConfig)
	}
	span := (reqs[len(reqs)-1].Timestamp - reqs[0].Timestamp) / 1000
	if !(span > 0) {
		return 0, fmt.Errorf("%w: the trace spans no time", ErrConfig)
	}
	tokens := 0
	for i := range reqs {
		tokens += reqs[i].InputLength
	}
	return float64(tokens) / span, nil
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
