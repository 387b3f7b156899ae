package core

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// chain returns n blocks of one prompt, named as a consistent engine
// names them (the same names on every worker).
func chain(n int, salt uint64) []StoredBlock {
	out := make([]StoredBlock, n)
	var seq uint64
	for i := range out {
		local := splitmix(uint64(i) + salt)
		seq = ChainStep(seq, local)
		out[i] = StoredBlock{BlockHash: seq, TokensHash: local}
	}
	return out
}

func localsOf(blocks []StoredBlock) []uint64 {
	out := make([]uint64, len(blocks))
	for i, b := range blocks {
		out[i] = b.TokensHash
	}
	return out
}

// BenchmarkFindMatches times a 64-block query over 128 workers in the
// shapes that cost the most: every worker holding the whole prefix (a
// 128-member set at every depth), and worker i holding the first i%64+1
// blocks (a worker drops out at every depth).
func BenchmarkFindMatches(b *testing.B) {
	blocks := chain(64, 0)
	q := localsOf(blocks)
	for _, shape := range []string{"all-hold-64", "staggered"} {
		b.Run(shape, func(b *testing.B) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			for w := range 128 {
				n := 64
				if shape == "staggered" {
					n = w%64 + 1
				}
				if err := x.ApplyStored(Worker{ID: uint64(w)}, 1, nil, blocks[:n]); err != nil {
					b.Fatal(err)
				}
			}
			dst := make([]Match, 0, 128)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				dst = x.AppendMatches(dst[:0], q, false)
			}
			if len(dst) != 128 {
				b.Fatalf("%d matches", len(dst))
			}
		})
	}
}

// BenchmarkFindMatchesParallel runs the all-hold-64 query from every
// core at once: reads share the lock and scale.
func BenchmarkFindMatchesParallel(b *testing.B) {
	blocks := chain(64, 0)
	q := localsOf(blocks)
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	for w := range 128 {
		if err := x.ApplyStored(Worker{ID: uint64(w)}, 1, nil, blocks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]Match, 0, 128)
		for pb.Next() {
			dst = x.AppendMatches(dst[:0], q, false)
		}
	})
}

// BenchmarkApply stores a 32-block prompt on a worker and removes it
// again; ns/op covers 64 block operations. With writers > 1, that many
// goroutines apply at once (each to its own workers): the write lock
// serialises them.
func BenchmarkApply(b *testing.B) {
	for _, writers := range []int{1, 2} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			prompts := make([][]StoredBlock, 64)
			for i := range prompts {
				prompts[i] = chain(32, uint64(i)<<20)
			}
			var next atomic.Uint64
			b.SetParallelism(1)
			b.ReportAllocs()
			run := func(id uint64, n int) {
				hashes := make([]uint64, 32)
				for i := range n {
					p := prompts[(int(id)*7+i)%len(prompts)]
					w := Worker{ID: id*16 + uint64(i%16)}
					if err := x.ApplyStored(w, 1, nil, p); err != nil {
						b.Error(err)
						return
					}
					for j := range p {
						hashes[j] = p[j].BlockHash
					}
					if err := x.ApplyRemoved(w, 2, hashes); err != nil {
						b.Error(err)
						return
					}
				}
			}
			if writers == 1 {
				run(0, b.N)
				return
			}
			b.SetParallelism(writers) // writers per GOMAXPROCS
			b.RunParallel(func(pb *testing.PB) {
				id := next.Add(1)
				n := 0
				for pb.Next() {
					n++
				}
				run(id, n)
			})
		})
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	ev := Event{ID: 1, Kind: EventStored, ParentHash: new(uint64), Blocks: chain(32, 0)}
	data, err := ev.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for range b.N {
		if _, err := DecodeEvent(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplySteady is an engine fleet at a steady size, the shape of
// the replayed traces without their reading: 16 workers each hold 128
// prompts of 256 blocks (32k blocks, a large name table); each round one
// worker stores a prompt and evicts its oldest, tail first. The prompts
// come round again, each to the same worker (160 per worker, so one is
// stored again long after it was evicted), so that the benchmark's own
// memory is small and fixed. ns/block is per block stored or removed.
func BenchmarkApplySteady(b *testing.B) {
	const workers, held, cycle, blocks = 16, 128, 160, 256
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	prompts := make([][]StoredBlock, workers*cycle)
	for i := range prompts {
		prompts[i] = chain(blocks, uint64(i+1)<<20)
	}
	hashes := make([][]uint64, len(prompts)) // each prompt's names, tail first
	for i, p := range prompts {
		for j := range p {
			hashes[i] = append(hashes[i], p[len(p)-1-j].BlockHash)
		}
	}
	round := func(i int) {
		w := Worker{ID: uint64(i % workers)}
		if err := x.ApplyStored(w, 1, nil, prompts[i%len(prompts)]); err != nil {
			b.Fatal(err)
		}
		if old := i - workers*held; old >= 0 {
			if err := x.ApplyRemoved(w, 2, hashes[old%len(prompts)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range workers * held {
		round(i)
	}
	b.ResetTimer()
	for i := range b.N {
		round(workers*held + i)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*blocks*b.N), "ns/block")
}

// BenchmarkFindMatchesWhileApplying times 64-block matches while another
// goroutine applies 4,096-block stores and their removals without pause:
// with the write lock held a section of writeSection blocks at a time
// (section=default) and for a whole event (section=event). match-p99-ns
// is what a router's routes wait behind an engine's long prompt.
func BenchmarkFindMatchesWhileApplying(b *testing.B) {
	for _, sec := range []struct {
		name string
		size int
	}{{"default", 0}, {"event", 1 << 30}} {
		b.Run("section="+sec.name, func(b *testing.B) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			x.writeSection = sec.size
			const workers = 16
			probes := make([][]uint64, workers)
			for w := range workers {
				p := chain(512, uint64(w+1)<<40)
				if err := x.ApplyStored(Worker{ID: uint64(w)}, 1, nil, p); err != nil {
					b.Fatal(err)
				}
				probes[w] = localsOf(p[:64])
			}
			long := chain(4096, 99<<40)
			hashes := make([]uint64, len(long))
			for i := range long {
				hashes[i] = long[len(long)-1-i].BlockHash
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				w := Worker{ID: 1000}
				for {
					select {
					case <-stop:
						return
					default:
					}
					_ = x.ApplyStored(w, 1, nil, long)
					_ = x.ApplyRemoved(w, 2, hashes)
				}
			}()
			lat := make([]int64, 0, b.N)
			dst := make([]Match, 0, workers)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				dst = x.AppendMatches(dst[:0], probes[i%workers], false)
				lat = append(lat, time.Since(t0).Nanoseconds())
			}
			b.StopTimer()
			close(stop)
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "match-p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "match-p99-ns")
		})
	}
}

// BenchmarkApplyEventSizes stores a prompt of n new blocks at the root
// and removes it, tail first, over and over: what an event costs beside
// its blocks (the worker's lookup, a run and segment made and freed, the
// lock) shows at n=1, the per-block cost at large n.
func BenchmarkApplyEventSizes(b *testing.B) {
	for _, n := range []int{1, 8, 64, 512} {
		b.Run(fmt.Sprintf("blocks=%d", n), func(b *testing.B) {
			x := NewIndex(IndexOptions{Mode: ModeWarn})
			w := Worker{ID: 1}
			blocks := chain(n, 77)
			tailFirst := make([]uint64, n)
			for i := range blocks {
				tailFirst[n-1-i] = blocks[i].BlockHash
			}
			for range b.N {
				if err := x.ApplyStored(w, 1, nil, blocks); err != nil {
					b.Fatal(err)
				}
				if err := x.ApplyRemoved(w, 2, tailFirst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n*b.N), "ns/block")
		})
	}
}
