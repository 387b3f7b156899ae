package core

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGrowthWhileMatching grows an index from empty to pairs
// (worker, block) pairs, as four engines fill their caches (prompts of
// 32-512 blocks, 70 % of them under one of 64 shared 32-block system
// prompts, a quarter of the stored prompts evicted later, tail first),
// while another goroutine matches 64-block prompts, one every 100 us or
// so (a router's pace, leaving the writer its core). Each event is
// applied in calls of at most writeSection blocks, so a call is one hold
// of the write lock: hold-cpu-max-us is the most CPU time one took (on
// Linux: the writer's thread's, which a busy machine's preemptions do not
// inflate), the stall every query waiting then shares, whatever grew in
// it (name tables, child tables, segments, the root's filter);
// hold-max-us the longest in wall time. match-p99-ns and match-max-us are
// the queries' own, waits for the lock included.
func BenchmarkGrowthWhileMatching(b *testing.B) {
	for _, pairs := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("pairs=%dM", pairs/1_000_000), func(b *testing.B) {
			for range b.N {
				growWhileMatching(b, pairs)
			}
		})
	}
}

// growthPrompt is one prompt of the growth benchmark: its worker, the
// system prompt it extends (-1: none) and its own blocks.
type growthPrompt struct {
	w      Worker
	system int
	blocks []StoredBlock
}

func growWhileMatching(b *testing.B, pairs int) {
	b.StopTimer()
	const workers, systems, systemLen = 4, 64, 32
	rng := rand.New(rand.NewPCG(uint64(pairs), 7))
	sys := make([][]StoredBlock, systems)
	for i := range sys {
		sys[i] = chain(systemLen, uint64(i+1)<<48)
	}
	prompt := func(i int) growthPrompt {
		p := growthPrompt{w: Worker{ID: uint64(i % workers)}, system: -1}
		n := 32 + rng.IntN(480)
		var parent uint64
		if rng.IntN(10) < 7 {
			p.system = rng.IntN(systems)
			parent = sys[p.system][systemLen-1].BlockHash
			n -= systemLen
		}
		p.blocks = chainFrom(parent, n, uint64(i+1)<<24)
		return p
	}
	// The queries: the first prompts', which are stored early (some of
	// them evicted later), 64 blocks each.
	queries := make([][]uint64, 1024)
	for i := range queries {
		p := prompt(i)
		q := localsOf(p.blocks)
		if p.system >= 0 {
			q = append(localsOf(sys[p.system]), q...)
		}
		queries[i] = q[:min(64, len(q))]
	}
	rng = rand.New(rand.NewPCG(uint64(pairs), 7)) // the same prompts again, to store

	x := NewIndex(IndexOptions{Mode: ModeWarn})
	stopMatching := matchEvery100us(x, queries)

	runtime.LockOSThread() // threadCPU reads this thread's time
	defer runtime.UnlockOSThread()
	ht := newHoldTimes(4 * pairs / writeSection)
	x.holdProbe = ht.probe
	timed := func(f func() error) {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	held := make([]map[int]bool, workers) // the system prompts each worker stores
	for i := range held {
		held[i] = map[int]bool{}
	}
	var stored []growthPrompt
	live := 0
	start := time.Now()
	b.StartTimer()
	for i := 0; live < pairs; i++ {
		p := prompt(i)
		var parent *uint64
		if p.system >= 0 {
			if !held[p.w.ID][p.system] {
				held[p.w.ID][p.system] = true
				timed(func() error { return x.ApplyStored(p.w, 1, nil, sys[p.system]) })
				live += systemLen
			}
			parent = &sys[p.system][systemLen-1].BlockHash
		}
		for lo := 0; lo < len(p.blocks); lo += writeSection {
			piece := p.blocks[lo:min(len(p.blocks), lo+writeSection)]
			timed(func() error { return x.ApplyStored(p.w, 1, parent, piece) })
			parent = &piece[len(piece)-1].BlockHash
		}
		live += len(p.blocks)
		stored = append(stored, p)
		if rng.IntN(100) < 26 && len(stored) > 1 {
			// Evict an earlier prompt, tail first.
			j := rng.IntN(len(stored) - 1)
			e := stored[j]
			stored[j] = stored[len(stored)-1]
			stored = stored[:len(stored)-1]
			hashes := make([]uint64, len(e.blocks))
			for k := range e.blocks {
				hashes[k] = e.blocks[len(e.blocks)-1-k].BlockHash
			}
			for lo := 0; lo < len(hashes); lo += writeSection {
				piece := hashes[lo:min(len(hashes), lo+writeSection)]
				timed(func() error { return x.ApplyRemoved(e.w, 2, piece) })
			}
			live -= len(hashes)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	lat := stopMatching()
	holds, cpuHolds := ht.wall, ht.cpu
	slices.Sort(holds)
	slices.Sort(cpuHolds)
	slices.Sort(lat)
	b.ReportMetric(float64(cpuHolds[len(cpuHolds)-1])/1e3, "hold-cpu-max-us")
	b.ReportMetric(float64(cpuHolds[len(cpuHolds)*999/1000])/1e3, "hold-cpu-p99.9-us")
	b.ReportMetric(float64(holds[len(holds)-1])/1e3, "hold-max-us")
	b.ReportMetric(float64(holds[len(holds)/2])/1e3, "hold-p50-us")
	b.ReportMetric(float64(holds[len(holds)*999/1000])/1e3, "hold-p99.9-us")
	b.ReportMetric(float64(lat[len(lat)/2]), "match-p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), "match-p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1])/1e3, "match-max-us")
	b.ReportMetric(float64(live)/elapsed.Seconds()/1e6, "Mpairs/s")
	b.StartTimer()
}

// holdTimes records each hold of an Index's write lock, in wall time and
// in the holding thread's CPU time (the caller locks its thread to the
// goroutine that writes), timed from inside it through Index.holdProbe:
// the writer's work outside the lock, such as the arrays it makes ahead,
// holds no query up.
type holdTimes struct {
	wall, cpu []int64
	c0        int64
	t0        time.Time
}

func newHoldTimes(n int) *holdTimes {
	return &holdTimes{wall: make([]int64, 0, n), cpu: make([]int64, 0, n)}
}

func (h *holdTimes) probe(held bool) {
	if held {
		h.c0, h.t0 = threadCPU(), time.Now()
		return
	}
	h.wall = append(h.wall, time.Since(h.t0).Nanoseconds())
	h.cpu = append(h.cpu, threadCPU()-h.c0)
}

// matchEvery100us matches queries round-robin against x, one every 100 us
// or so (a router's pace, leaving a writer its core), in a goroutine of
// its own until the returned function is called; that returns each
// match's latency in ns.
func matchEvery100us(x *Index, queries [][]uint64) (stop func() []int64) {
	var stopped atomic.Bool
	matched := make(chan []int64)
	go func() {
		lat := make([]int64, 0, 1<<16)
		var dst []Match
		for i := 0; !stopped.Load(); i++ {
			t0 := time.Now()
			dst = x.AppendMatches(dst[:0], queries[i%len(queries)], false)
			lat = append(lat, time.Since(t0).Nanoseconds())
			time.Sleep(100 * time.Microsecond)
		}
		matched <- lat
	}()
	return func() []int64 {
		stopped.Store(true)
		return <-matched
	}
}
