package policy

// SGLang is SGLang model gateway's cache_aware policy.
const SGLang = "sglang"

func init() { Register(SGLang, func(env Env) (Policy, error) { return newSGLang(env), nil }) }

// SGLang's defaults (sgl-model-gateway, CacheAwareConfig).
const (
	sglangBalanceAbs   = 64
	sglangBalanceRel   = 1.5
	sglangMatchRateMin = 0.3
)

// sglang is cache_aware (sgl-model-gateway/src/policies/cache_aware.rs):
//
//	load = the router's own in-flight requests per worker
//	if max - min > 64 and max > 1.5 * min: the least loaded
//	else the longest match in its own approximate tree; match rate =
//	     matched / prompt tokens; > 0.3: the worker holding the match,
//	     else the least loaded
//	then the prompt is inserted into the tree under the chosen worker
//
// Ties for the least loaded go to the first worker (min_by_key); the doc
// comment's "smallest tree" for the low-match case is not what the code
// does. The tree here is over the router's token blocks (chained hashes),
// not single tokens: a match is counted in whole blocks, so it can fall
// short of upstream's by less than a block. The deepest matched block's
// most recent worker is the match's worker. Upstream evicts past 2^26
// tokens, far beyond a simulated run; entries here are not evicted.
//
// Upstream keeps, per tree node, each worker's last access time, and a
// match goes to the most recent of the deepest node's workers. Every
// insert stamps all its blocks with one new time, so that worker is
// always the last one whose prompt held the block: the tree
// (sglang_tree.go) keeps just that.
type sglang struct {
	blockSize int
	tree      sglangTree
}

func newSGLang(env Env) *sglang {
	bs := 16
	if env.Indexer != nil {
		bs = env.Indexer.BlockSize()
	}
	return &sglang{blockSize: bs}
}

func (*sglang) Name() string { return SGLang }

func (p *sglang) Pick(q *Query, rows []Row) (int, error) {
	load := func(i int) int { return rows[i].Requests }
	lo, hi := load(0), load(0)
	for i := range rows {
		lo, hi = min(lo, load(i)), max(hi, load(i))
	}
	pick := -1
	if !(hi-lo > sglangBalanceAbs && float64(hi) > sglangBalanceRel*float64(lo)) {
		matched, w := p.tree.longestMatch(q.Blocks)
		if len(q.Tokens) > 0 && float64(matched*p.blockSize)/float64(len(q.Tokens)) > sglangMatchRateMin {
			if i, err := rowOf(rows, w); err == nil {
				pick = i
			}
		}
	}
	if pick < 0 {
		pick = argminFirst(len(rows), load)
	}
	p.tree.insert(q.Blocks, rows[pick].Worker)
	return pick, nil
}
