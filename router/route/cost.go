package route

import "math"

// Load is one worker rank's active load as the cost sees it.
type Load struct {
	// PrefillTokens: tokens of its active requests still in prefill.
	PrefillTokens uint64
	// DecodeBlocks: the distinct blocks of its active requests, plus those
	// of this request it does not already have active.
	DecodeBlocks uint64
}

// Cost is Dynamo's cost of sending a prompt of promptTokens tokens, of
// which overlapBlocks leading blocks are cached, to a rank with load l:
//
//	raw    = (prefill tokens + prompt tokens) / block size
//	credit = overlap_score_credit * overlap blocks
//	cost   = prefill_load_scale * max(0, raw - credit) + decode blocks
//
// Lower is better. It also returns the prefill term before scaling. Both
// are finite and >= 0 for any input: with Params.Validate's bounds the
// terms cannot overflow, and a cost that still would (params never
// validated) is capped at math.MaxFloat64, so no NaN or Inf ever reaches
// the choice or an answer.
func Cost(p Params, blockSize int, l Load, promptTokens int, overlapBlocks uint32) (cost, prefillBlocks float64) {
	// Summed as floats: a u64 sum could wrap.
	raw := (float64(l.PrefillTokens) + float64(max(promptTokens, 0))) / float64(max(blockSize, 1))
	prefillBlocks = finite(math.Max(0, raw-p.OverlapScoreCredit*float64(overlapBlocks)))
	return finite(p.PrefillLoadScale*prefillBlocks + float64(l.DecodeBlocks)), prefillBlocks
}

// finite caps v into [0, math.MaxFloat64]; NaN (a product of 0 and Inf,
// only from params never validated) counts as the worst cost.
func finite(v float64) float64 {
	switch {
	case v >= 0 && v <= math.MaxFloat64:
		return v
	case v < 0:
		return 0
	}
	return math.MaxFloat64
}
