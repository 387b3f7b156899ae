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
// Lower is better. It also returns the prefill term before scaling.
func Cost(p Params, blockSize int, l Load, promptTokens int, overlapBlocks uint32) (cost, prefillBlocks float64) {
	raw := float64(l.PrefillTokens+uint64(promptTokens)) / float64(blockSize)
	prefillBlocks = math.Max(0, raw-p.OverlapScoreCredit*float64(overlapBlocks))
	return p.PrefillLoadScale*prefillBlocks + float64(l.DecodeBlocks), prefillBlocks
}
