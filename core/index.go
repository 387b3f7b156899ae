package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Index is the radix tree of which worker holds which KV blocks, fed by
// the engines' KV events and queried with the canonical local hashes of a
// prompt. Its semantics are Dynamo's RadixTree (see docs/index.md for
// the few places where it deliberately differs).
//
// Create one with NewIndex (the zero value is not usable). An Index is
// safe for concurrent use: FindMatches, AppendMatches, Dump, Workers and
// Stats take a read lock and run in parallel with each other; the Apply
// family, the clears and RemoveWorker take the write lock, a long event or
// a large clear a section of blocks at a time, so a match never waits
// behind a whole prompt's store or a whole rank's clear. Decode events
// (DecodeEvent) and hash prompts before calling in, outside any lock.
// docs/index.md describes the model and its measurements.
type Index struct {
	mu   sync.RWMutex
	t    tree
	mode atomic.Uint32
	log  *slog.Logger
	// writeSection overrides the package's (benchmarks compare sizes).
	writeSection int
	// holdProbe, when set (benchmarks), is called as a store's or a
	// removal's section takes the write lock (true) and before it lets go
	// (false): what is timed between is the hold itself, without what the
	// writer does outside the lock.
	holdProbe func(held bool)
	// clearing: the ranks a clear is releasing a section at a time
	// (index_clear.go), each with the channel closed when it ends.
	clearing map[Worker]chan struct{}
	// scratch memory for AppendMatches, one slot per concurrent reader.
	scratch scratchSlots
}

// NewIndex returns an empty index.
func NewIndex(opts IndexOptions) *Index {
	x := &Index{log: opts.Logger}
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	x.t.init()
	x.mode.Store(uint32(opts.Mode.resolve()))
	return x
}

// Mode returns the effective mode: ModeWarn or ModeEnforce.
func (x *Index) Mode() Mode { return Mode(x.mode.Load()) }

// SetMode changes the mode for the events applied from now on.
// ModeFromEnvironment (and any invalid value) reads the environment again.
// Workers already marked unstable stay so until cleared or removed.
func (x *Index) SetMode(m Mode) { x.mode.Store(uint32(m.resolve())) }

// Apply applies one event of a worker: the worker is (workerID,
// ev.DPRank). See ApplyStored, ApplyRemoved and ClearWorker.
func (x *Index) Apply(workerID uint64, ev Event) error {
	w := Worker{ID: workerID, DPRank: ev.DPRank}
	switch ev.Kind {
	case EventStored:
		return x.ApplyStored(w, ev.ID, ev.ParentHash, ev.Blocks)
	case EventRemoved:
		return x.ApplyRemoved(w, ev.ID, ev.BlockHashes)
	case EventCleared:
		x.ClearWorker(w)
		return nil
	}
	return fmt.Errorf("%w: event %d of worker %d has unknown kind %d", ErrInvalidArgument, ev.ID, workerID, ev.Kind)
}

// ApplyJSON decodes one event in Dynamo's JSON form (as DecodeEvent) and
// applies it for workerID (as Apply), decoding into reused memory: a
// host that receives JSON events applies them without an allocation. A
// malformed event changes nothing and returns DecodeEvent's error.
func (x *Index) ApplyJSON(workerID uint64, data []byte) error {
	m := eventMemories.Get().(*eventMemory)
	defer putEventMemory(m) // after the event, which points into m, is applied
	ev, err := decodeEventInto(data, m)
	if err != nil {
		return err
	}
	return x.Apply(workerID, ev)
}

// ApplyRouterEventJSON is ApplyJSON for a router event in JSON
// (DecodeRouterEvent, then ApplyRouterEvent).
func (x *Index) ApplyRouterEventJSON(data []byte) error {
	m := eventMemories.Get().(*eventMemory)
	defer putEventMemory(m)
	ev, err := decodeRouterEventInto(data, m)
	if err != nil {
		return err
	}
	return x.ApplyRouterEvent(ev)
}

// ApplyRouterEvent applies a router event's event for its worker. Every
// storage tier is indexed alike.
func (x *Index) ApplyRouterEvent(ev RouterEvent) error {
	if !ev.StorageTier.valid() {
		return fmt.Errorf("%w: router event of worker %d has unknown storage tier %q", ErrInvalidArgument, ev.WorkerID, ev.StorageTier)
	}
	return x.Apply(ev.WorkerID, ev.Event)
}

// ApplyStored records that w stored blocks, chained under the block whose
// external hash is parentHash (nil: at the root).
//
// An unknown parent drops the whole store; a store with a block equal to
// parentHash is rejected whole; both return an error wrapping
// ErrEventRejected in every mode. A block whose content is indexed under
// another external hash (hash mismatch), that w already holds (duplicate
// store), or whose external hash w already uses for another block (name
// reused: the name moves, w keeps that other block unnamed, as Dynamo
// does; this includes a hash repeated within the store) is counted and
// logged, and returned as an error only in ModeEnforce; it does not stop
// the store. An event's violations are each counted, but logged and
// returned one by one only up to a bound (the first of each kind always),
// so that one message naming millions of blocks cannot flood the log or
// the memory.
//
// A long store is applied writeSection blocks at a time, the write lock
// released in between (see writeSection): readers never wait behind more.
func (x *Index) ApplyStored(w Worker, eventID uint64, parentHash *uint64, blocks []StoredBlock) error {
	var r report
	r.begin(w, eventID, x.Mode())
	if h, bad := selfReference(parentHash, blocks); bad {
		x.lockWriteFor(w)
		x.t.rejectSelfReference(w, h, &r)
		x.unlockWrite()
		return x.finish(&r)
	}
	section := x.section()
	for i := 0; ; {
		end := min(len(blocks), i+section)
		spare := x.t.pool.makeSpare(len(blocks) - i) // before the lock: see blockPool.spare
		x.lockWriteFor(w)
		x.t.pool.holdSpare(spare, x.t.poolLimit())
		ok := x.t.stored(w, eventID, parentHash, blocks[i:end], len(blocks)-end, i > 0, &r)
		x.unlockWrite()
		if !ok || end == len(blocks) {
			break
		}
		// The next section goes on under this one's last block.
		parentHash = &blocks[end-1].BlockHash
		i = end
	}
	return x.finish(&r)
}

// writeSection is how many blocks of an event the Index applies under
// one hold of its write lock: a match that comes in meanwhile waits for
// that many at most (a few microseconds), not for a whole prompt of
// thousands (BenchmarkFindMatchesWhileApplying).
const writeSection = 128

func (x *Index) lockWrite() {
	x.mu.Lock()
	if x.holdProbe != nil {
		x.holdProbe(true)
	}
}

func (x *Index) unlockWrite() {
	if x.holdProbe != nil {
		x.holdProbe(false)
	}
	x.mu.Unlock()
}

func (x *Index) section() int {
	if x.writeSection > 0 {
		return x.writeSection
	}
	return writeSection
}

// ApplyRemoved records that w evicted the blocks with these external
// hashes. Removal does not cascade to descendants, but a block no worker
// holds any more is dropped with its links to its children. Unknown
// hashes are skipped, the rest applied, and an error wrapping
// ErrEventRejected returned.
func (x *Index) ApplyRemoved(w Worker, eventID uint64, blockHashes []uint64) error {
	var r report
	r.begin(w, eventID, x.Mode())
	section := x.section()
	for i := 0; i < len(blockHashes) || i == 0; i += section {
		x.lockWriteFor(w)
		x.t.removed(w, eventID, blockHashes[i:min(len(blockHashes), i+section)], &r)
		x.unlockWrite()
	}
	return x.finish(&r)
}

// ClearWorker drops every block of one rank (the "cleared" event). The
// rank stays known, and is no longer unstable.
//
// A rank holding many blocks is cleared a section at a time, the write
// lock released in between (index_clear.go): a match meanwhile sees the
// rank with part of its blocks, and the rank's own mutations wait for the
// clear to end.
func (x *Index) ClearWorker(w Worker) { x.clearRank(w) }

// ClearAllBlocks drops every block of every rank of a worker; the ranks
// stay known, and are no longer unstable. Each rank is cleared as by
// ClearWorker.
func (x *Index) ClearAllBlocks(workerID uint64) {
	for _, w := range x.ranksOf(workerID) {
		x.clearRank(w)
	}
	x.lockWriteForID(workerID)
	x.t.clearAll(workerID) // a rank that came meanwhile
	x.unlockWrite()
}

// RemoveWorker makes every rank of a worker leave the index, with its
// blocks and its per-worker stats (the totals keep its violations). The
// blocks are released as by ClearWorker, then the ranks leave at once.
func (x *Index) RemoveWorker(workerID uint64) {
	for _, w := range x.ranksOf(workerID) {
		x.clearRank(w)
	}
	x.lockWriteForID(workerID)
	x.t.removeWorker(workerID)
	x.unlockWrite()
}

// ranksOf returns the known ranks of worker id.
func (x *Index) ranksOf(id uint64) []Worker {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []Worker
	for _, wi := range x.t.ranks(id) {
		out = append(out, x.t.workers[wi].w)
	}
	return out
}

// Match is one worker's result of a prefix match.
type Match struct {
	Worker   Worker
	Score    uint32 // consecutive prefix blocks of the query the worker holds
	TreeSize uint64 // blocks the worker holds in all
}

// OverlapScores is Dynamo's find_matches result. Frequencies is always
// empty: the index does not track access frequency.
type OverlapScores struct {
	Scores      map[Worker]uint32
	TreeSizes   map[Worker]uint64
	Frequencies []uint32
}

// FindMatches scores every worker by how many leading blocks of the
// query (canonical local hashes) it holds, in a row. Workers with score 0
// are absent. With earlyExit, as in Dynamo 1.6.1, the last worker left is
// still counted along the query (one worker holding 5 query blocks scores
// 5), but the walk stops at the first node with several children that it
// reaches with a single worker left; that worker scores the depth reached.
func (x *Index) FindMatches(localHashes []uint64, earlyExit bool) OverlapScores {
	var buf [16]Match
	matches := x.AppendMatches(buf[:0], localHashes, earlyExit)
	out := OverlapScores{
		Scores:      make(map[Worker]uint32, len(matches)),
		TreeSizes:   make(map[Worker]uint64, len(matches)),
		Frequencies: []uint32{},
	}
	for _, m := range matches {
		out.Scores[m.Worker] = m.Score
		out.TreeSizes[m.Worker] = m.TreeSize
	}
	return out
}

// AppendMatches appends the matches of FindMatches to dst, sorted by
// Worker. It does not allocate when dst has room for them.
func (x *Index) AppendMatches(dst []Match, localHashes []uint64, earlyExit bool) []Match {
	if len(localHashes) == 0 || !x.t.rootFilter.mayHold(localHashes[0]) {
		// A query whose first block no worker holds (about half of them,
		// on the replayed traces) is told so by the root's filter, which
		// needs no lock: it takes neither the lock nor a scratch.
		return dst
	}
	x.mu.RLock()
	if first := x.t.childOf(rootRun, localHashes[0]); first != noRun {
		if hs := x.t.runs.at(first).holders; len(hs) == 1 {
			dst = x.t.matchOne(dst, localHashes, earlyExit, first, hs[0].wi)
		} else {
			sc, slot := x.scratch.get()
			dst = x.t.appendMatches(dst, localHashes, earlyExit, first, sc)
			x.scratch.put(slot)
		}
	}
	x.mu.RUnlock()
	return dst
}

// Dump returns the index as router events, mostly one store of one block
// per (worker, block) in breadth-first order, as Dynamo dumps. Replaying
// them into an empty index rebuilds the same workers, blocks and matches
// (violation counts and the mode are not part of the dump); see
// docs/index.md for the events that rebuild holes and detached blocks.
// It holds the read lock throughout, so writers wait for it.
func (x *Index) Dump() []RouterEvent {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.t.dump()
}

// Workers returns every known worker rank, sorted.
func (x *Index) Workers() []Worker {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.t.workerList()
}

// Stats returns a snapshot of sizes and violation counts.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.t.stats()
	s.Mode = x.Mode()
	return s
}

// report collects the violations of one event while the write lock is
// held; finish logs them and builds the error after it is released.
//
// It records at most maxRecordedViolations of them, plus the first of
// each kind beyond, and counts the rest by kind: one event may name
// millions of blocks (a removal of every block of a large cache, or a
// peer's crafted message), and a log line and an error each would turn
// one message into gigabytes of log and memory. The tree's counts
// (Stats, WorkerInfo) still count every violation.
type report struct {
	worker  Worker
	eventID uint64
	mode    Mode
	found   []violationRecord // nil until a violation: healthy events allocate nothing
	kinds   uint32            // bit k: a record of kind k is in found
	omitted [NumViolations]uint64
}

// maxRecordedViolations bounds the violations of one event logged and
// returned one by one.
const maxRecordedViolations = 16

// The messages of the index's log records about violations: one per
// violation recorded (attributes worker_id, dp_rank, event_id, hash,
// kind), and one with the count by kind of an event's others.
const (
	LogViolation      = "kv index: hash stability violation"
	LogMoreViolations = "kv index: more hash stability violations in this event, counted but not logged one by one"
)

type violationRecord struct {
	kind     Violation
	hash     uint64
	nodeHash uint64 // hash mismatch: the external hash the tree holds
}

func (r *report) begin(w Worker, eventID uint64, mode Mode) {
	r.worker, r.eventID, r.mode = w, eventID, mode
}

func (r *report) add(kind Violation, hash, nodeHash uint64) {
	if len(r.found) >= maxRecordedViolations && r.kinds&(1<<kind) != 0 {
		r.omitted[kind]++
		return
	}
	r.kinds |= 1 << kind
	r.found = append(r.found, violationRecord{kind: kind, hash: hash, nodeHash: nodeHash})
}

func (r *report) enforced() bool { return r.mode == ModeEnforce }

// eventAttrs are the log attributes naming the report's event: its
// worker rank and id (room left for a record's own).
func (r *report) eventAttrs() []slog.Attr {
	return append(make([]slog.Attr, 0, 6),
		slog.Uint64("worker_id", r.worker.ID),
		slog.Uint64("dp_rank", uint64(r.worker.DPRank)),
		slog.Uint64("event_id", r.eventID))
}

// omittedAttrs is the count of each kind of violation not recorded, as
// log attributes (nil when every one was recorded).
func (r *report) omittedAttrs() []slog.Attr {
	var out []slog.Attr
	for k, n := range r.omitted {
		if n > 0 {
			out = append(out, slog.Uint64(Violation(k).String(), n))
		}
	}
	return out
}

// finish logs the recorded violations (and a count of the rest by kind)
// and returns those that are errors in the report's mode, joined when
// there are several: every kind that occurred is among them.
func (x *Index) finish(r *report) error {
	if len(r.found) == 0 {
		return nil
	}
	level := slog.LevelWarn
	if r.enforced() {
		level = slog.LevelError
	}
	var errs []error
	ctx := context.Background()
	logging := x.log.Enabled(ctx, level)
	for _, v := range r.found {
		if logging {
			attrs := append(r.eventAttrs(), slog.Uint64("hash", v.hash), slog.String("kind", v.kind.String()))
			if v.kind == ViolationHashMismatch {
				attrs = append(attrs, slog.Uint64("indexed_hash", v.nodeHash))
			}
			x.log.LogAttrs(ctx, level, LogViolation, attrs...)
		}
		if r.enforced() || v.kind.rejects() {
			errs = append(errs, &StabilityError{Kind: v.kind, Worker: r.worker, EventID: r.eventID, Hash: v.hash, Enforced: r.enforced()})
		}
	}
	if logging {
		if more := r.omittedAttrs(); more != nil {
			x.log.LogAttrs(ctx, level, LogMoreViolations, append(r.eventAttrs(), more...)...)
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}
