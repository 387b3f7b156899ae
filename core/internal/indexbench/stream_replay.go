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

// PackedStream is a stream laid out for replaying: records without
// pointers over one array of their hashes. The Go collector marks every
// object the live heap points to on each cycle, and a Stream's records,
// each with slices of its own, gave it tens of thousands of objects to
// mark on every cycle of a replay: work the index did not cause, and
// that Dynamo's harness, without a collector, does not pay. Pack the
// stream, let the Stream go, then Replay it.
type PackedStream struct {
	Header StreamHeader
	recs   []replayRecord
	words  []uint64 // every record's hashes: a store's in pairs (block hash, tokens hash)
}

type replayRecord struct {
	kind      byte
	hasParent bool
	worker    uint32
	parent    uint64
	off, n    int // its hashes (a store's pairs) in words
}

// Pack lays s out for replaying; it keeps no reference to s.
func Pack(s *Stream) *PackedStream {
	words := 0
	for i := range s.Records {
		r := &s.Records[i]
		words += len(r.Local) + 2*len(r.Blocks) + len(r.Hashes)
	}
	p := &PackedStream{Header: s.Header, recs: make([]replayRecord, 0, len(s.Records)), words: make([]uint64, 0, words)}
	for i := range s.Records {
		r := &s.Records[i]
		rr := replayRecord{kind: r.Kind, hasParent: r.HasParent, worker: r.Worker, parent: r.Parent, off: len(p.words)}
		switch r.Kind {
		case RecStored:
			for _, b := range r.Blocks {
				p.words = append(p.words, b[0], b[1])
			}
			rr.n = len(r.Blocks)
		case RecRemoved:
			p.words = append(p.words, r.Hashes...)
			rr.n = len(r.Hashes)
		default:
			p.words = append(p.words, r.Local...)
			rr.n = len(r.Local)
		}
		p.recs = append(p.recs, rr)
	}
	return p
}

// hashes returns record r's hashes (a query's local hashes, a removal's
// block hashes).
func (p *PackedStream) hashes(r *replayRecord) []uint64 {
	return p.words[r.off : r.off+r.n : r.off+r.n]
}

// storeArgs fills buf with store record r's blocks in core's type. The
// replay calls it before starting each store's clock, into one reused
// buffer: the harness then allocates nothing while replaying, so the
// collector's work during the replay is the index's own.
func (p *PackedStream) storeArgs(buf []core.StoredBlock, r *replayRecord) []core.StoredBlock {
	buf = buf[:0]
	pairs := p.words[r.off : r.off+2*r.n]
	for j := 0; j < len(pairs); j += 2 {
		buf = append(buf, core.StoredBlock{BlockHash: pairs[j], TokensHash: pairs[j+1]})
	}
	return buf
}

// ReplayStream replays s (Pack(s).Replay()); a caller that measures
// should let s go before the run, as indexstream replay does.
func ReplayStream(s *Stream) (StreamResult, error) { return Pack(s).Replay() }

// Replay replays the stream into a fresh index, timing each index call, then
// times the probes against the final index and measures its live heap.
func (p *PackedStream) Replay() (StreamResult, error) {
	var res StreamResult
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var buf []core.StoredBlock
	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	matches := make([]core.Match, 0, p.Header.Workers)
	// A query is copied into q before its clock starts, as a router holds
	// a prompt's hashes it has just computed, and as the Dynamo side's
	// RadixTree queries are (its find_matches takes its own copy).
	var q []uint64
	d := NewDigest()
	var probes []int
	for i := range p.recs {
		r := &p.recs[i]
		w := core.Worker{ID: uint64(r.worker)}
		switch r.kind {
		case RecMatch:
			q = append(q[:0], p.hashes(r)...)
			t0 := time.Now()
			matches = x.AppendMatches(matches[:0], q, false)
			dt := time.Since(t0).Nanoseconds()
			res.IndexNanos += dt
			res.RouteNanos = append(res.RouteNanos, dt)
			res.BlockOps += r.n
			d = d.Matches(matches)
		case RecStored:
			var parent *uint64
			if r.hasParent {
				parent = &r.parent
			}
			buf = p.storeArgs(buf, r)
			t0 := time.Now()
			err := x.ApplyStored(w, uint64(i), parent, buf)
			dt := time.Since(t0).Nanoseconds()
			if err != nil {
				return res, fmt.Errorf("record %d: %w", i, err)
			}
			res.IndexNanos += dt
			res.ApplyNanos += dt
			res.StoreNanos += dt
			res.BlockOps += r.n
			res.ApplyBlocks += r.n
			res.StoredBlocks += r.n
		case RecRemoved:
			hashes := p.hashes(r)
			t0 := time.Now()
			err := x.ApplyRemoved(w, uint64(i), hashes)
			dt := time.Since(t0).Nanoseconds()
			if err != nil {
				return res, fmt.Errorf("record %d: %w", i, err)
			}
			res.IndexNanos += dt
			res.ApplyNanos += dt
			res.BlockOps += r.n
			res.ApplyBlocks += r.n
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
	passes := max(int(p.Header.ProbePasses), 1)
	res.ProbeNanos = make([]int64, 0, passes*len(probes))
	for pass := range passes {
		for _, i := range probes {
			q = append(q[:0], p.hashes(&p.recs[i])...)
			t0 := time.Now()
			matches = x.AppendMatches(matches[:0], q, false)
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
