package route

import (
	"cmp"
	"math"
	"slices"
)

// A decision lists its candidates by cost, then worker, then rank. The
// sort moves small keys rather than whole candidates: a cost >= 0 orders
// as its IEEE bits do, so a key compares as integers, and the candidates
// are put in place once at the end.

type costKey struct {
	bits   uint64 // math.Float64bits of a cost >= 0 (+0 for -0)
	worker uint64
	rank   uint32
	i      uint32 // index in the unsorted candidates
}

func compareCostKeys(a, b costKey) int {
	if c := cmp.Compare(a.bits, b.bits); c != 0 {
		return c
	}
	if c := cmp.Compare(a.worker, b.worker); c != 0 {
		return c
	}
	return cmp.Compare(a.rank, b.rank)
}

func compareCandidates(a, b Candidate) int {
	if c := cmp.Compare(a.Cost, b.Cost); c != 0 {
		return c
	}
	if c := cmp.Compare(a.WorkerID, b.WorkerID); c != 0 {
		return c
	}
	return cmp.Compare(a.DPRank, b.DPRank)
}

// sortCandidates sorts out by (cost, worker, rank), with keys and tmp as
// scratch (returned for reuse). A negative or NaN cost, which the cost
// function does not produce, takes the plain comparison sort.
func sortCandidates(out []Candidate, keys []costKey, tmp []Candidate) ([]costKey, []Candidate) {
	keys = keys[:0]
	sorted := true
	for i := range out {
		c := &out[i]
		if !(c.Cost >= 0) {
			slices.SortFunc(out, compareCandidates)
			return keys, tmp
		}
		k := costKey{bits: math.Float64bits(c.Cost), worker: c.WorkerID, rank: c.DPRank, i: uint32(i)}
		if c.Cost == 0 {
			k.bits = 0
		}
		if i > 0 && compareCostKeys(keys[i-1], k) > 0 {
			sorted = false
		}
		keys = append(keys, k)
	}
	if sorted {
		return keys, tmp
	}
	slices.SortFunc(keys, compareCostKeys)
	// Put each candidate in place by following the permutation's cycles:
	// every candidate moves once (a copy of the whole list and back moved
	// each twice; a candidate with its TTFT terms is ~150 bytes). A placed
	// slot's key points at itself.
	for start := range keys {
		if int(keys[start].i) == start {
			continue
		}
		held := out[start]
		j := start
		for {
			src := int(keys[j].i)
			keys[j].i = uint32(j)
			if src == start {
				out[j] = held
				break
			}
			out[j] = out[src]
			j = src
		}
	}
	return keys, tmp
}
