package indexbench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/kvhash/kvhash/core"
)

// Digest folds query results into one number both sides of a comparison
// compute the same way (bench/dynamo/src/main.rs does too): FNV-1a over
// 64-bit words rather than bytes. Per query, in stream order (routing
// queries, then the first pass of probes): the number of matched workers,
// then for each, sorted by (worker id, dp rank): id, dp rank, score.
type Digest uint64

// NewDigest returns the empty digest.
func NewDigest() Digest { return 14695981039346656037 }

// Word folds one word in.
func (d Digest) Word(v uint64) Digest { return (d ^ Digest(v)) * 1099511628211 }

// Matches folds one query's matches (sorted by worker, as AppendMatches
// returns them) in.
func (d Digest) Matches(ms []core.Match) Digest {
	d = d.Word(uint64(len(ms)))
	for _, m := range ms {
		d = d.Word(m.Worker.ID).Word(uint64(m.Worker.DPRank)).Word(uint64(m.Score))
	}
	return d
}

// StreamResult is what one replay of a stream measured. Figure names match
// what bench/dynamo prints.
type StreamResult struct {
	BlockOps    int   // stored + removed + matched blocks (routing queries)
	IndexNanos  int64 // inside index calls, for those
	ApplyBlocks int   // stored + removed blocks
	ApplyNanos  int64 // inside ApplyStored / ApplyRemoved
	// The same apart: stored blocks and the time inside ApplyStored.
	StoredBlocks int
	StoreNanos   int64
	RouteNanos   []int64 // each routing query
	ProbeNanos   []int64 // each probe query, every pass
	Digest       Digest
	Pairs        uint64  // stored (worker, block) pairs at the end
	HeapBytes    int64   // live heap of the final index
	HeapPerPair  float64 // HeapBytes / Pairs
}

// storeArgs fills buf with a store record's blocks in core's type. The
// replay calls it before starting each store's clock, into one reused
// buffer: the harness then allocates nothing while replaying, so the
// collector's work during the replay is the index's own.
func storeArgs(buf []core.StoredBlock, r *StreamRecord) []core.StoredBlock {
	buf = buf[:0]
	for _, b := range r.Blocks {
		buf = append(buf, core.StoredBlock{BlockHash: b[0], TokensHash: b[1]})
	}
	return buf
}

// ReplayStream replays s into a fresh index, timing each index call, then
// times the probes against the final index and measures its live heap.
func ReplayStream(s *Stream) (StreamResult, error) {
	var res StreamResult
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var buf []core.StoredBlock
	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	matches := make([]core.Match, 0, s.Header.Workers)
	d := NewDigest()
	var probes []int
	for i := range s.Records {
		r := &s.Records[i]
		w := core.Worker{ID: uint64(r.Worker)}
		switch r.Kind {
		case RecMatch:
			t0 := time.Now()
			matches = x.AppendMatches(matches[:0], r.Local, false)
			dt := time.Since(t0).Nanoseconds()
			res.IndexNanos += dt
			res.RouteNanos = append(res.RouteNanos, dt)
			res.BlockOps += len(r.Local)
			d = d.Matches(matches)
		case RecStored:
			var parent *uint64
			if r.HasParent {
				parent = &r.Parent
			}
			buf = storeArgs(buf, r)
			t0 := time.Now()
			err := x.ApplyStored(w, uint64(i), parent, buf)
			dt := time.Since(t0).Nanoseconds()
			if err != nil {
				return res, fmt.Errorf("record %d: %w", i, err)
			}
			res.IndexNanos += dt
			res.ApplyNanos += dt
			res.StoreNanos += dt
			res.BlockOps += len(r.Blocks)
			res.ApplyBlocks += len(r.Blocks)
			res.StoredBlocks += len(r.Blocks)
		case RecRemoved:
			t0 := time.Now()
			err := x.ApplyRemoved(w, uint64(i), r.Hashes)
			dt := time.Since(t0).Nanoseconds()
			if err != nil {
				return res, fmt.Errorf("record %d: %w", i, err)
			}
			res.IndexNanos += dt
			res.ApplyNanos += dt
			res.BlockOps += len(r.Hashes)
			res.ApplyBlocks += len(r.Hashes)
		case RecProbe:
			probes = append(probes, i)
		}
	}
	buf = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	res.HeapBytes = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	for _, ws := range x.Stats().Workers {
		res.Pairs += ws.Blocks
	}
	if res.Pairs > 0 {
		res.HeapPerPair = float64(res.HeapBytes) / float64(res.Pairs)
	}
	passes := max(int(s.Header.ProbePasses), 1)
	res.ProbeNanos = make([]int64, 0, passes*len(probes))
	for pass := range passes {
		for _, i := range probes {
			t0 := time.Now()
			matches = x.AppendMatches(matches[:0], s.Records[i].Local, false)
			res.ProbeNanos = append(res.ProbeNanos, time.Since(t0).Nanoseconds())
			if pass == 0 {
				d = d.Matches(matches)
			}
		}
	}
	res.Digest = d
	runtime.KeepAlive(x)
	return res, nil
}
