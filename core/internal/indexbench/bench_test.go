package indexbench

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvhash/kvhash/core"
)

var traceFlag = flag.String("tracefile", "",
	"Mooncake-format trace to replay (default $KVHASH_TRACE, else "+DefaultTracePath+" from the repository root)")

var (
	promptsOnce sync.Once
	prompts     []Prompt
	promptsErr  error
	recordings  = map[string]*Recording{}
)

func loadPrompts(b *testing.B) []Prompt {
	promptsOnce.Do(func() {
		path := *traceFlag
		if path == "" {
			path = os.Getenv("KVHASH_TRACE")
		}
		if path, promptsErr = ResolveTracePath(path, "."); promptsErr != nil {
			return
		}
		reqs, err := ReadTraceFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			promptsErr = fmt.Errorf("trace %s not found: pass -args -tracefile FILE or set KVHASH_TRACE (the trace is described in ../shared/data/README.md)", path)
			return
		}
		if err != nil {
			promptsErr = err
			return
		}
		prompts, promptsErr = Expand(reqs, 16)
	})
	if promptsErr != nil {
		b.Fatal(promptsErr)
	}
	return prompts
}

// BenchmarkTraceReplay replays the trace's event stream (recorded once
// per configuration by Simulate) into a fresh index per iteration, and
// reports:
//
//	block-ops/s   stored + removed + matched blocks per second spent in the
//	              index (one goroutine, so one core)
//	apply-blocks/s stored + removed blocks per second spent applying
//	p50-ns p99-ns latency of a 64-block query (each prompt's first 64
//	              blocks) against the final index
//	route-p50-ns route-p99-ns latency of the routing queries (whole
//	              prompts, median 724 blocks) during the replay
//	heap-B/pair   live heap of the index per stored (worker, block) pair
//
// and, to describe the workload, the final pairs and nodes, the blocks
// stored, removed and matched per replay, and the share of matched
// blocks that were cached on the chosen worker (hit-%).
func BenchmarkTraceReplay(b *testing.B) {
	for _, cfg := range []struct{ workers, capacity int }{{16, 32768}, {128, 8192}} {
		b.Run(fmt.Sprintf("workers=%d", cfg.workers), func(b *testing.B) {
			ps := loadPrompts(b)
			key := fmt.Sprint(cfg)
			rec := recordings[key]
			if rec == nil {
				var err error
				if rec, err = Simulate(ps, cfg.workers, cfg.capacity); err != nil {
					b.Fatal(err)
				}
				recordings[key] = rec
			}
			var indexTime, applyTime time.Duration
			var blockOps, applyBlocks int
			var route, lat []int64
			var heapPerPair, pairs, nodes float64
			b.ResetTimer()
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
				res, err := Replay(x, ps, rec)
				if err != nil {
					b.Fatal(err)
				}
				indexTime += res.IndexTime
				applyTime += res.ApplyTime
				blockOps += res.BlockOps
				applyBlocks += res.ApplyBlocks
				route = append(route, res.MatchNanos...)

				runtime.GC()
				runtime.ReadMemStats(&after)
				pairs = 0
				for _, ws := range x.Stats().Workers {
					pairs += float64(ws.Blocks)
				}
				heapPerPair = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / pairs
				nodes = float64(x.Stats().Nodes)

				lat = append(lat, queryLatencies(x, ps, 64, 5)...)
				runtime.KeepAlive(x)
			}
			b.ReportMetric(float64(blockOps)/indexTime.Seconds(), "block-ops/s")
			b.ReportMetric(float64(applyBlocks)/applyTime.Seconds(), "apply-blocks/s")
			b.ReportMetric(float64(Percentile(lat, 50)), "p50-ns")
			b.ReportMetric(float64(Percentile(lat, 99)), "p99-ns")
			b.ReportMetric(float64(Percentile(route, 50)), "route-p50-ns")
			b.ReportMetric(float64(Percentile(route, 99)), "route-p99-ns")
			b.ReportMetric(heapPerPair, "heap-B/pair")
			b.ReportMetric(pairs, "pairs")
			b.ReportMetric(nodes, "nodes")
			b.ReportMetric(float64(rec.Stored), "stored-blocks")
			b.ReportMetric(float64(rec.Removed), "removed-blocks")
			b.ReportMetric(float64(rec.Matched), "matched-blocks")
			b.ReportMetric(100*float64(rec.Hits)/float64(rec.Matched), "hit-%")
		})
	}
}

// queryLatencies times one query of the first n blocks of every prompt
// that long, passes times over.
func queryLatencies(x *core.Index, ps []Prompt, n, passes int) []int64 {
	out := make([]int64, 0, passes*len(ps))
	dst := make([]core.Match, 0, 256)
	for range passes {
		for i := range ps {
			if len(ps[i].Local) < n {
				continue
			}
			q := ps[i].Local[:n]
			t0 := time.Now()
			dst = x.AppendMatches(dst[:0], q, false)
			out = append(out, time.Since(t0).Nanoseconds())
		}
	}
	return out
}

var streamFlag = flag.String("stream", "", "a .kvs stream (indexstream gen) for the BenchmarkStream* benchmarks")

// recordBlocks fills buf with store record r's blocks in core's type.
func recordBlocks(buf []core.StoredBlock, r *StreamRecord) []core.StoredBlock {
	buf = buf[:0]
	for _, b := range r.Blocks {
		buf = append(buf, core.StoredBlock{BlockHash: b[0], TokensHash: b[1]})
	}
	return buf
}

// packedOrSkip lays the -stream file out for replaying (Pack), the
// Stream itself let go, skipping the benchmark without one.
func packedOrSkip(b *testing.B) *PackedStream {
	b.Helper()
	return Pack(streamOrSkip(b))
}

// streamOrSkip reads the -stream file, skipping the benchmark without one.
func streamOrSkip(b *testing.B) *Stream {
	b.Helper()
	if *streamFlag == "" {
		b.Skip("no -stream FILE")
	}
	s, err := ReadStreamFile(*streamFlag)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStreamProbes replays a stream once, then times its probe
// queries (64 blocks each) against the final index: the loop to profile
// for matching (-cpuprofile). Skipped without -stream.
func BenchmarkStreamProbes(b *testing.B) {
	s := streamOrSkip(b)
	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	var probes [][]uint64
	var buf []core.StoredBlock
	for i := range s.Records {
		r := &s.Records[i]
		w := core.Worker{ID: uint64(r.Worker)}
		switch r.Kind {
		case RecProbe:
			probes = append(probes, r.Local)
		case RecRemoved:
			if err := x.ApplyRemoved(w, uint64(i), r.Hashes); err != nil {
				b.Fatal(err)
			}
		case RecStored:
			var parent *uint64
			if r.HasParent {
				parent = &r.Parent
			}
			buf = recordBlocks(buf, r)
			if err := x.ApplyStored(w, uint64(i), parent, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	dst := make([]core.Match, 0, 256)
	b.ResetTimer()
	for i := range b.N {
		dst = x.AppendMatches(dst[:0], probes[i%len(probes)], false)
	}
}

// BenchmarkStreamJSON replays a stream's events as Dynamo's JSON (the
// Python and C bindings' apply_event path): decode-ns/op and apply-ns/op
// split one replay's time between core.DecodeEvent and Index.Apply.
// Skipped without -stream.
func BenchmarkStreamJSON(b *testing.B) {
	s := streamOrSkip(b)
	type jsonEvent struct {
		worker uint64
		data   []byte
	}
	var evs []jsonEvent
	var total int64
	for i := range s.Records {
		r := &s.Records[i]
		ev := core.Event{ID: uint64(i)}
		switch r.Kind {
		case RecStored:
			ev.Kind = core.EventStored
			if r.HasParent {
				ev.ParentHash = &r.Parent
			}
			ev.Blocks = recordBlocks(nil, r)
		case RecRemoved:
			ev.Kind, ev.BlockHashes = core.EventRemoved, r.Hashes
		default:
			continue
		}
		data, err := ev.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, jsonEvent{uint64(r.Worker), data})
		total += int64(len(data))
	}
	b.SetBytes(total)
	var decode, apply time.Duration
	b.ResetTimer()
	for range b.N {
		x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
		for _, e := range evs {
			t0 := time.Now()
			ev, err := core.DecodeEvent(e.data)
			t1 := time.Now()
			if err != nil {
				b.Fatal(err)
			}
			if err := x.Apply(e.worker, ev); err != nil {
				b.Fatal(err)
			}
			decode += t1.Sub(t0)
			apply += time.Since(t1)
		}
	}
	b.ReportMetric(float64(decode.Nanoseconds())/float64(b.N), "decode-ns/op")
	b.ReportMetric(float64(apply.Nanoseconds())/float64(b.N), "apply-ns/op")
}

// BenchmarkStreamReplay replays a whole stream (events and routing
// queries) into a fresh index per iteration, as indexstream replay does:
// the loop to profile for applying (-cpuprofile). Skipped without -stream.
func BenchmarkStreamReplay(b *testing.B) {
	p := packedOrSkip(b)
	b.ResetTimer()
	for range b.N {
		res, err := p.Replay()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.BlockOps)/float64(res.IndexNanos)*1e3, "Mblock-ops/s")
		b.ReportMetric(float64(res.ApplyBlocks)/float64(res.ApplyNanos)*1e3, "Mapply-blk/s")
	}
}
