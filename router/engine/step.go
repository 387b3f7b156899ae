package engine

// Step runs one scheduler step (see the package doc): it schedules running
// requests, then waiting ones, computes their tokens, caches the blocks
// they complete, samples tokens, frees finished requests, and says how
// long all that takes. Its cost is O(running requests + blocks allocated
// or cached), with no allocation in the steady state.
func (e *Engine) Step() StepResult {
	r := &e.res
	r.Duration, r.PrefillTokens, r.DecodeSeqs, r.KVUsage = 0, 0, 0, 0
	r.Admitted, r.FirstTokens, r.Generated = r.Admitted[:0], r.FirstTokens[:0], r.Generated[:0]
	r.Finished, r.Preempted, r.Stored, r.Removed = r.Finished[:0], r.Preempted[:0], r.Stored[:0], r.Removed[:0]
	e.stats.Steps++

	budget := e.cfg.MaxNumBatchedTokens
	e.scheduleRunning(&budget)
	if len(r.Preempted) == 0 { // vLLM admits nothing in a step that preempted
		e.scheduleWaiting(&budget)
	}

	prof := &e.cfg.Profile
	var prefillMs, contextProduct float64
	r.KVUsage = float64(e.pool.used()) / float64(len(e.pool.blocks))
	for _, s := range e.running {
		n := s.sched
		if n == 0 {
			continue
		}
		if s.prefillDone {
			r.DecodeSeqs++
		} else {
			r.PrefillTokens += n
			contextProduct += float64(n) * float64(s.computed)
			if prof.PrefillPerSequence {
				prefillMs += prof.PrefillMs(n)
			}
		}
		s.computed += n
		s.sched = 0
		e.storeBlocks(s)
		if s.computed == s.length() {
			e.sample(s)
		}
	}
	if !prof.PrefillPerSequence {
		prefillMs = prof.PrefillMs(r.PrefillTokens)
	}
	ms := prefillMs + prof.PrefillContext*contextProduct
	if r.DecodeSeqs > 0 {
		ms += prof.DecodeMs(r.KVUsage)
	}
	r.Duration = msToDuration(ms)
	e.removeFinished()
	return *r
}

// scheduleRunning gives each running request, oldest first, its next
// tokens: one for a decode, a chunk of its prompt in prefill. A request
// that cannot get its blocks preempts the newest running request, itself
// last.
func (e *Engine) scheduleRunning(budget *int) {
	for i := 0; i < len(e.running) && *budget > 0; i++ {
		s := e.running[i]
		want := s.length() - s.computed
		if want > *budget {
			if !e.cfg.EnableChunkedPrefill {
				continue
			}
			want = *budget
		}
		for !e.grow(s, s.computed+want) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			if victim == s {
				break
			}
		}
		if !s.running {
			break // it preempted itself: it was the last
		}
		s.sched = want
		*budget -= want
	}
}

// scheduleWaiting admits waiting requests in order while they fit.
func (e *Engine) scheduleWaiting(budget *int) {
	bs := e.cfg.BlockSize
	for e.waiting.len() > 0 && len(e.running) < e.cfg.MaxNumSeqs && *budget > 0 {
		s := e.waiting.front()
		total := s.length()
		hits, freeHits := e.prefixHit(s, (total-1)/bs)
		want := total - hits*bs
		if want > *budget {
			if !e.cfg.EnableChunkedPrefill {
				return
			}
			want = *budget
		}
		need := (hits*bs+want+bs-1)/bs - hits
		if need > e.pool.nFree-freeHits {
			return // no overtaking: the head waits for blocks
		}
		e.waiting.popFront()
		for _, i := range s.blocks { // the hit blocks, from prefixHit
			e.pool.touch(i)
		}
		s.hitGen = 0
		s.computed, s.stored = hits*bs, hits
		e.allocate(s, need)
		s.running, s.prefillDone = true, false
		e.running = append(e.running, s)
		s.sched = want
		*budget -= want

		e.stats.PrefixQueries += uint64(total)
		e.stats.PrefixHits += uint64(hits * bs)
		if !s.everAdmitted {
			s.everAdmitted = true
			s.cachedTokens = hits * bs
			e.stats.PromptTokens += uint64(s.prompt)
			e.res.Admitted = append(e.res.Admitted, Admission{ID: s.id, CachedTokens: s.cachedTokens})
		}
	}
}

// prefixHit is how many of s's leading blocks (at most limit) the cache
// holds, and how many of those are free. A waiting request's block table
// holds its hit blocks, reused while the cache's contents have not changed,
// so that a head of queue waiting for blocks costs no map lookups a step.
func (e *Engine) prefixHit(s *seq, limit int) (hits, freeHits int) {
	p := e.pool
	if s.hitGen != p.gen || s.hitLimit != limit {
		s.blocks = s.blocks[:0]
		for len(s.blocks) < limit && len(s.blocks) < len(s.hashes) {
			i, ok := p.byHash[s.hashes[len(s.blocks)]]
			if !ok {
				break
			}
			s.blocks = append(s.blocks, i)
		}
		s.hitGen, s.hitLimit = p.gen, limit
	}
	for _, i := range s.blocks {
		if p.blocks[i].free {
			freeHits++
		}
	}
	return len(s.blocks), freeHits
}

// grow gives s blocks for its first tokens tokens, or reports that too few
// are free (changing nothing).
func (e *Engine) grow(s *seq, tokens int) bool {
	bs := e.cfg.BlockSize
	need := (tokens+bs-1)/bs - len(s.blocks)
	if need <= 0 {
		return true
	}
	if need > e.pool.nFree {
		return false
	}
	e.allocate(s, need)
	return true
}

// allocate appends n blocks from the free queue to s's block table,
// reporting the hashes this evicts.
func (e *Engine) allocate(s *seq, n int) {
	for range n {
		i, evicted, was := e.pool.alloc()
		if was {
			e.res.Removed = append(e.res.Removed, evicted)
		}
		s.blocks = append(s.blocks, i)
	}
}

// preempt frees s's blocks and puts it back at the front of the waiting
// queue, to be recomputed (vLLM's preemption by recompute).
func (e *Engine) preempt(s *seq) {
	e.pool.release(s.blocks)
	s.blocks = s.blocks[:0]
	s.hitGen = 0
	s.running, s.prefillDone = false, false
	s.computed, s.stored, s.sched = 0, 0, 0
	s.preemptions++
	e.stats.Preemptions++
	e.waiting.pushFront(s)
	e.res.Preempted = append(e.res.Preempted, s.id)
}

// storeBlocks caches the blocks s has just completed, each under its hash
// when the request gave one and no other block holds it, and reports each
// run of newly cached blocks as one BlockStored.
func (e *Engine) storeBlocks(s *seq) {
	full := s.computed / e.cfg.BlockSize
	run := -1
	flush := func(end int) {
		if run < 0 {
			return
		}
		ev := BlockStored{RequestID: s.id, FirstBlock: run, Hashes: s.hashes[run:end:end]}
		if run > 0 {
			ev.Parent, ev.HasParent = s.hashes[run-1], true
		}
		e.res.Stored = append(e.res.Stored, ev)
		run = -1
	}
	for k := s.stored; k < full; k++ {
		if k < len(s.hashes) && e.pool.cache(s.blocks[k], s.hashes[k]) {
			if run < 0 {
				run = k
			}
			continue
		}
		flush(k)
	}
	flush(full)
	s.stored = max(s.stored, full)
}

// sample produces s's next token: its computed tokens cover its length.
func (e *Engine) sample(s *seq) {
	s.generated++
	e.stats.GenerationTokens++
	s.prefillDone = true
	if !s.firstToken {
		s.firstToken = true
		e.res.FirstTokens = append(e.res.FirstTokens, s.id)
	}
	e.res.Generated = append(e.res.Generated, s.id)
	if s.generated == s.output {
		e.res.Finished = append(e.res.Finished, Finished{
			ID: s.id, PromptTokens: s.prompt, CachedTokens: s.cachedTokens,
			OutputTokens: s.generated, Preemptions: s.preemptions,
		})
	}
}

// removeFinished frees the requests that produced their last token.
func (e *Engine) removeFinished() {
	if len(e.res.Finished) == 0 {
		return
	}
	kept := e.running[:0]
	for _, s := range e.running {
		if s.generated < s.output {
			kept = append(kept, s)
			continue
		}
		e.pool.release(s.blocks)
		s.blocks = nil
		s.running = false
		delete(e.byID, s.id)
		e.stats.Finished++
	}
	clear(e.running[len(kept):])
	e.running = kept
}
