package policy

import (
	"errors"
	"math/rand/v2"
)

// LLMD is llm-d's default inference-scheduling profile.
const LLMD = "llmd"

func init() { Register(LLMD, newLLMD) }

// llm-d's defaults (gateway-api-inference-extension v1.5.0).
const (
	llmdQueueWeight  = 2
	llmdKVWeight     = 2
	llmdPrefixWeight = 3
	// llmdMaxPrefixBlocks: blocks of a prompt the prefix scorer matches.
	llmdMaxPrefixBlocks = 256
	// llmdDefaultLRUBlocks: the approximate index's per-pod capacity when
	// the engine's is unknown.
	llmdDefaultLRUBlocks = 31250
)

// llmd scores 2*Q + 2*K + 3*X and takes the highest, ties at random:
//
//	Q = (maxW - W) / (maxW - minW), 1 when every W is equal; W: scraped waiting requests
//	K = 1 - scraped KV cache usage
//	X = matched / total prompt blocks (at most 256) in its own approximate index
//
// The approximate index is llm-d's prefix plugin: per pod, an LRU of the
// block hashes of the prompts the router sent it, learned at each routing
// decision (never from KV events), its capacity the engine's GPU blocks.
// Upstream hashes blocks of characters (4 per token of the engine's
// block); here blocks are the router's token blocks.
type llmd struct {
	rng   *rand.Rand
	index *approxIndex
	match []int
}

func newLLMD(env Env) (Policy, error) {
	capacity := env.EngineBlocks
	if capacity <= 0 {
		capacity = llmdDefaultLRUBlocks
	}
	return &llmd{rng: newRNG(env.Seed), index: newApproxIndex(capacity)}, nil
}

func (*llmd) Name() string { return LLMD }

func (p *llmd) Pick(q *Query, rows []Row) (int, error) {
	if len(rows) == 0 {
		return 0, errors.New("no candidates")
	}
	blocks := q.Blocks[:min(len(q.Blocks), llmdMaxPrefixBlocks)]
	p.match = p.index.match(p.match, blocks, rows)
	queue := queueScores(rows)
	pick := argmaxRandom(p.rng, len(rows), func(i int) float64 {
		x := 0.0
		if len(blocks) > 0 {
			x = float64(p.match[i]) / float64(len(blocks))
		}
		return llmdQueueWeight*queue(i) + llmdKVWeight*(1-rows[i].Metrics.KVUsage) + llmdPrefixWeight*x
	})
	p.index.add(blocks, rows[pick].Worker)
	return pick, nil
}

// queueScores is llm-d's queue scorer: (maxW - W) / (maxW - minW) over
// the scraped waiting counts, 1 for every pod when they are all equal.
func queueScores(rows []Row) func(int) float64 {
	lo, hi := rows[0].Metrics.Waiting, rows[0].Metrics.Waiting
	for _, r := range rows[1:] {
		lo, hi = min(lo, r.Metrics.Waiting), max(hi, r.Metrics.Waiting)
	}
	return func(i int) float64 {
		if hi == lo {
			return 1
		}
		return float64(hi-rows[i].Metrics.Waiting) / float64(hi-lo)
	}
}
