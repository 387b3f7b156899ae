package main

import (
	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

// shrinkCase minimizes a failing differential case: it tries smaller
// variants (fewer tokens, no options, smaller blocks, simpler values) and
// keeps any that still fails, until no variant fails or maxTrials runs
// out. Every accepted variant is strictly smaller, so it terminates.
func shrinkCase(ref, t *testeeRun, c diffCase, maxTrials int) *shrunk {
	best := c
	res := &shrunk{}
	reason, w, g := mismatch(ref, t, best)
	if reason == "" {
		return nil // failed only inside its batch: nothing to shrink
	}
	for improved := true; improved && res.Trials < maxTrials; {
		improved = false
		for _, cand := range variants(best) {
			if res.Trials >= maxTrials {
				break
			}
			if size(cand) >= size(best) {
				continue
			}
			res.Trials++
			if r, cw, cg := mismatch(ref, t, cand); r != "" {
				best, reason, w, g = cand, r, cw, cg
				improved = true
				break
			}
		}
	}
	// Only the requests that differ, so the report shows the failure and
	// not three passing requests around it.
	for i, r := range best.requests() {
		if i < len(g) && i < len(w) && compareAnswer(r.Op, w[i], g[i]) == "" {
			continue
		}
		res.Requests = append(res.Requests, showRequest(r))
		if i < len(w) {
			res.Expected = append(res.Expected, show(w[i]))
		}
		if i < len(g) {
			res.Got = append(res.Got, show(g[i]))
		}
	}
	res.Reason = reason
	return res
}

// mismatch runs one case on both and returns why they differ ("" if not).
func mismatch(ref, t *testeeRun, c diffCase) (string, []answer, []answer) {
	want, err := ref.call(c.requests())
	if err != nil {
		return "", nil, nil // the reference cannot judge this input
	}
	got, err := t.call(c.requests())
	if err != nil {
		if t.startErr != nil {
			return "", nil, nil // it no longer starts: nothing left to learn
		}
		return err.Error(), want, got // this input crashed it or timed out
	}
	for i, r := range c.requests() {
		if why := compareAnswer(r.Op, want[i], got[i]); why != "" {
			return r.Op + ": " + why, want, got
		}
	}
	return "", want, got
}

// size orders cases: every variant must be smaller to be accepted.
func size(c diffCase) int {
	s := 64*len(c.Tokens) + int(abs64(c.BlockSize)) + 8*len(c.Locals)
	if c.Options.LoraName != nil {
		s += 4 + len(*c.Options.LoraName)
	}
	if c.Options.CacheNamespace != nil {
		s += 4 + len(*c.Options.CacheNamespace)
	}
	if c.Options.Eagle {
		s += 2
	}
	if c.Options.MMHashes != nil {
		s++
		for _, e := range c.Options.MMHashes {
			s += 2 + len(e)
		}
	}
	for _, tok := range c.Tokens {
		if tok != 0 {
			s++
		}
	}
	if c.Parent != 0 {
		s++
	}
	if c.Local != 0 {
		s++
	}
	return s
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// variants lists smaller candidates, the biggest cuts first.
func variants(c diffCase) []diffCase {
	var out []diffCase
	with := func(f func(*diffCase)) {
		v := c
		v.Options.MMHashes = append([][]protocol.U64(nil), c.Options.MMHashes...)
		f(&v)
		out = append(out, v)
	}
	// The boldest cuts first: when the bug does not depend on the input
	// (a wrong seed) they end the search at once.
	with(func(v *diffCase) { *v = diffCase{BlockSize: 1} })
	with(func(v *diffCase) { v.Options = protocol.Options{}; v.Locals = nil; v.Parent, v.Local = 0, 0 })
	n := len(c.Tokens)
	for _, keep := range []int{0, n / 2, n - int(max(c.BlockSize, 1)), n - 1} {
		if keep >= 0 && keep < n {
			with(func(v *diffCase) { v.Tokens = c.Tokens[:keep]; fitMM(v) })
		}
	}
	if n > 1 {
		with(func(v *diffCase) { v.Tokens = c.Tokens[n/2:]; fitMM(v) })
	}
	with(func(v *diffCase) { v.Options.MMHashes = nil })
	with(func(v *diffCase) { v.Options.LoraName = nil })
	with(func(v *diffCase) { v.Options.CacheNamespace = nil })
	with(func(v *diffCase) { v.Options.Eagle = false; fitMM(v) })
	if name := c.Options.LoraName; name != nil && len(*name) > 1 {
		with(func(v *diffCase) { s := string([]rune(*name)[:len([]rune(*name))/2]); v.Options.LoraName = &s })
	}
	if name := c.Options.CacheNamespace; name != nil && len(*name) > 1 {
		with(func(v *diffCase) { s := string([]rune(*name)[:len([]rune(*name))/2]); v.Options.CacheNamespace = &s })
	}
	for _, bs := range []int64{1, c.BlockSize / 2, c.BlockSize - 1} {
		if bs >= 1 && bs < c.BlockSize {
			with(func(v *diffCase) { v.BlockSize = bs; fitMM(v) })
		}
	}
	if k := len(c.Options.MMHashes); k > 0 {
		with(func(v *diffCase) { v.Options.MMHashes = v.Options.MMHashes[:k-1] })
		for i, e := range c.Options.MMHashes {
			if len(e) > 1 {
				with(func(v *diffCase) { v.Options.MMHashes[i] = e[:1] })
			}
		}
	}
	with(func(v *diffCase) { v.Locals = nil })
	if len(c.Locals) > 1 {
		with(func(v *diffCase) { v.Locals = c.Locals[:len(c.Locals)/2] })
	}
	with(func(v *diffCase) { v.Parent, v.Local = 0, 0 })
	with(func(v *diffCase) { v.Tokens = make([]uint32, n) })
	return out
}

// fitMM drops mm entries that no longer have a block, so that shrinking a
// valid input does not turn it into an error case (which would mask the
// original failure behind a different one).
func fitMM(v *diffCase) {
	limit := blockCount(len(v.Tokens), int(v.BlockSize), v.Options.Eagle)
	if len(v.Options.MMHashes) > limit {
		v.Options.MMHashes = v.Options.MMHashes[:limit]
	}
}
