package indexer

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// Indexer holds the fleet's state: the worker registry, one core.Index
// per (model, tenant), and each worker rank's state and counters. It is
// safe for concurrent use: ingest's Handler calls for different Sources,
// HTTP queries and registry changes may all run at once.
//
// Locking: mu guards the registry's structure (the worker map, each
// worker's rank map, the index map) and is never held while hashing or
// while a core.Index works. Each rank has its own mutex, held while one
// of its events is translated and applied, so a rank's events, counters,
// salts and seq move together; its state is also an atomic so that
// queries read it without locking.
type Indexer struct {
	opts Options
	// violationLog is the core indexes' logger: Options.Logger with each
	// rank's violation records limited (violationlog.go); violations is
	// its handler, which knows each rank's verified candidate.
	violationLog *slog.Logger
	violations   *violationLimiter

	// regMu serializes the registry changes that drop blocks (preclear.go).
	regMu   sync.Mutex
	mu      sync.RWMutex
	workers map[uint64]*worker
	indexes map[ModelKey]*core.Index
	// members lists each index's workers sorted by id, so that candidate
	// lists (one per route) need neither a map walk nor a sort.
	members map[ModelKey][]*worker

	// streamRanks: the dp rank each stream's batches last named, when it
	// differs from the stream's own (engines that send global ranks), so
	// that a stream's gap or restart clears the rank its blocks are under.
	streamMu    sync.Mutex
	streamRanks map[streamKey]uint32

	// checks: the engine-hash verification setup per distinct engine_hash
	// setting. agreeLogged: per index, the disagreement last logged.
	checksMu    sync.Mutex
	checks      map[string]*hashCheck
	agreeMu     sync.Mutex
	agreeLogged map[ModelKey]string
	// peerRoots: unknown roots by content among engines that should agree
	// (verify_peers.go); taken inside a rank's mutex, never around one.
	peerRootsMu sync.Mutex
	peerRoots   map[peerRootKey]peerRoot

	// refused counts the events refused by the bounds (caps.go).
	refused refusals
}

type streamKey struct {
	worker   uint64
	rank     uint32
	endpoint string
	topic    string
}

func keyOf(src ingest.Source) streamKey {
	return streamKey{worker: src.WorkerID, rank: src.DPRank, endpoint: src.Endpoint, topic: src.Topic}
}

// noteStreamRank records the rank a stream's batch named.
func (x *Indexer) noteStreamRank(src ingest.Source, dpRank uint32) {
	k := keyOf(src)
	x.streamMu.Lock()
	defer x.streamMu.Unlock()
	if dpRank == src.DPRank {
		delete(x.streamRanks, k)
		return
	}
	if x.streamRanks == nil {
		x.streamRanks = map[streamKey]uint32{}
	}
	x.streamRanks[k] = dpRank
}

// streamRank returns the rank a stream's blocks are under.
func (x *Indexer) streamRank(src ingest.Source) uint32 {
	x.streamMu.Lock()
	defer x.streamMu.Unlock()
	if r, ok := x.streamRanks[keyOf(src)]; ok {
		return r
	}
	return src.DPRank
}

// worker is one registered worker.
type worker struct {
	spec    WorkerSpec
	key     ModelKey
	index   *core.Index
	healthy atomic.Bool
	check   atomic.Pointer[hashCheck] // its engine_hash's verification
	ranks   map[uint32]*rank          // guarded by Indexer.mu
	sorted  []*rank                   // the same ranks by rank number; guarded by Indexer.mu
}

// addRankLocked adds a rank to w, keeping sorted in order. The caller
// holds x.mu.
func (x *Indexer) addRankLocked(w *worker, r *rank) {
	x.violations.track(r)
	w.ranks[r.w.DPRank] = r
	i, _ := slices.BinarySearchFunc(w.sorted, r.w.DPRank, func(a *rank, n uint32) int { return cmp.Compare(a.w.DPRank, n) })
	w.sorted = slices.Insert(w.sorted, i, r)
}

// New returns an empty Indexer.
func New(opts Options) (*Indexer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// Resolve the mode once (the environment, when asked), so that every
	// index of the fleet runs in the same one.
	o.Mode = core.NewIndex(core.IndexOptions{Mode: o.Mode}).Mode()
	x := &Indexer{opts: o, workers: map[uint64]*worker{}, indexes: map[ModelKey]*core.Index{}, members: map[ModelKey][]*worker{}}
	x.violations = newViolationLimiter(o.Logger.Handler(), o.Now)
	x.violationLog = slog.New(x.violations)
	return x, nil
}

// BlockSize returns the router's block size.
func (x *Indexer) BlockSize() int { return x.opts.BlockSize }

// Mode returns the effective stability mode of the indexes.
func (x *Indexer) Mode() core.Mode { return x.opts.Mode }

// AddWorker registers a worker, or updates it when its id is known. A
// worker that moves to another (model, tenant) leaves its old index with
// its blocks first; an update to a smaller dp_size removes the ranks it
// no longer has (ranks an engine named beyond the old dp_size stay). It
// returns whether the worker is new.
func (x *Indexer) AddWorker(spec WorkerSpec) (bool, error) {
	return x.addWorker(spec, true)
}

// addWorker is AddWorker; with update false a known worker is left as it
// is (a stream registering its worker must not overwrite the spec that a
// concurrent registration just set).
func (x *Indexer) addWorker(spec WorkerSpec, update bool) (bool, error) {
	if spec.DPSize < 0 {
		return false, fmt.Errorf("%w: worker %d: dp_size %d is negative", ErrInvalidWorker, spec.WorkerID, spec.DPSize)
	}
	if spec.DPSize == 0 {
		spec.DPSize = 1
	}
	if err := spec.checkLabels(); err != nil {
		return false, fmt.Errorf("%w: worker %d: %w", ErrInvalidWorker, spec.WorkerID, err)
	}
	spec.Tenant = CanonicalTenant(spec.Tenant)
	key := ModelKey{Model: spec.Model, Tenant: spec.Tenant}
	setting, err := ParseEngineHash(spec.EngineHash)
	if err != nil {
		return false, fmt.Errorf("%w: worker %d: %w", ErrInvalidWorker, spec.WorkerID, err)
	}
	hc, err := x.hashCheckFor(setting)
	if err != nil {
		return false, fmt.Errorf("%w: worker %d: %w", ErrInvalidWorker, spec.WorkerID, err)
	}
	if update {
		x.regMu.Lock()
		defer x.regMu.Unlock()
		preClear(x.updateDropping(spec, key))
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.workers[spec.WorkerID]; ok {
		if !update {
			return false, nil
		}
		if old.key == key {
			for r := uint32(spec.DPSize); r < uint32(old.spec.DPSize); r++ {
				x.removeRankLocked(old, r)
			}
			if old.check.Swap(hc) != hc {
				old.resetVerificationLocked()
			}
			old.spec = spec
			x.ensureRanksLocked(old)
			return false, nil
		}
		x.removeLocked(old)
	}
	w := &worker{spec: spec, key: key, index: x.indexLocked(key), ranks: map[uint32]*rank{}}
	w.healthy.Store(true)
	w.check.Store(hc)
	x.ensureRanksLocked(w)
	x.workers[spec.WorkerID] = w
	m := x.members[key]
	i, _ := slices.BinarySearchFunc(m, spec.WorkerID, func(a *worker, id uint64) int { return cmp.Compare(a.spec.WorkerID, id) })
	x.members[key] = slices.Insert(m, i, w)
	return true, nil
}

// ensureRanksLocked creates the ranks 0..DPSize-1 that do not exist yet.
func (x *Indexer) ensureRanksLocked(w *worker) {
	for r := range uint32(w.spec.DPSize) {
		if _, ok := w.ranks[r]; !ok {
			nr := newRank(core.Worker{ID: w.spec.WorkerID, DPRank: r}, x.opts.Now())
			nr.awaiting.Store(x.opts.AwaitConnect && w.spec.Endpoint != "")
			x.addRankLocked(w, nr)
		}
	}
}

func (x *Indexer) indexLocked(key ModelKey) *core.Index {
	if ix, ok := x.indexes[key]; ok {
		return ix
	}
	ix := core.NewIndex(core.IndexOptions{Mode: x.opts.Mode, Logger: x.violationLog})
	x.indexes[key] = ix
	return ix
}

// RemoveWorker removes a worker and its blocks; it reports whether the
// worker was known. An index left without workers is dropped.
func (x *Indexer) RemoveWorker(id uint64) bool {
	x.regMu.Lock()
	defer x.regMu.Unlock()
	preClear(x.workerDropping(id))
	x.mu.Lock()
	defer x.mu.Unlock()
	w, ok := x.workers[id]
	if ok {
		x.removeLocked(w)
	}
	return ok
}

func (x *Indexer) removeLocked(w *worker) {
	delete(x.workers, w.spec.WorkerID)
	for _, r := range w.sorted {
		x.retireLocked(r)
	}
	w.index.RemoveWorker(w.spec.WorkerID)
	m := slices.DeleteFunc(slices.Clone(x.members[w.key]), func(o *worker) bool { return o == w })
	if len(m) > 0 {
		x.members[w.key] = m
		return
	}
	delete(x.members, w.key)
	delete(x.indexes, w.key)
}

// RemoveRank removes one rank of a worker and its blocks; it reports
// whether the rank was known. The worker keeps its other ranks (and its
// dp_size: a later event of that rank brings it back).
func (x *Indexer) RemoveRank(id uint64, dpRank uint32) bool {
	x.regMu.Lock()
	defer x.regMu.Unlock()
	preClear(x.rankDropping(id, dpRank))
	x.mu.Lock()
	defer x.mu.Unlock()
	w, ok := x.workers[id]
	return ok && x.removeRankLocked(w, dpRank)
}

func (x *Indexer) removeRankLocked(w *worker, dpRank uint32) bool {
	r, ok := w.ranks[dpRank]
	if !ok {
		return false
	}
	delete(w.ranks, dpRank)
	w.sorted = slices.DeleteFunc(slices.Clone(w.sorted), func(o *rank) bool { return o == r })
	x.retireLocked(r)
	w.index.ClearWorker(r.w)
	return true
}

// SetHealthy sets a worker's health flag (the proxy's health checks):
// unhealthy workers are not routing candidates; their blocks stay.
func (x *Indexer) SetHealthy(id uint64, healthy bool) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	w, ok := x.workers[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownWorker, id)
	}
	w.healthy.Store(healthy)
	return nil
}

// Worker returns one worker's spec, health and ranks.
func (x *Indexer) Worker(id uint64) (WorkerInfo, bool) {
	x.mu.RLock()
	w, ok := x.workers[id]
	x.mu.RUnlock()
	if !ok {
		return WorkerInfo{}, false
	}
	return x.info(w, statsByWorker(w.index.Stats()), x.agreementOf(w.key).disagreeing()), true
}

// Workers returns every worker, sorted by id, with its ranks' state,
// counters and core stats.
func (x *Indexer) Workers() []WorkerInfo {
	x.mu.RLock()
	ws := make([]*worker, 0, len(x.workers))
	for _, w := range x.workers {
		ws = append(ws, w)
	}
	x.mu.RUnlock()
	slices.SortFunc(ws, func(a, b *worker) int { return cmp.Compare(a.spec.WorkerID, b.spec.WorkerID) })
	stats := map[*core.Index]map[core.Worker]core.WorkerStats{}
	disagree := map[ModelKey]map[core.Worker]bool{}
	out := make([]WorkerInfo, 0, len(ws))
	for _, w := range ws {
		s, ok := stats[w.index]
		if !ok {
			s = statsByWorker(w.index.Stats())
			stats[w.index] = s
		}
		d, ok := disagree[w.key]
		if !ok {
			d = x.agreementOf(w.key).disagreeing()
			disagree[w.key] = d
		}
		out = append(out, x.info(w, s, d))
	}
	return out
}

func statsByWorker(s core.Stats) map[core.Worker]core.WorkerStats {
	m := make(map[core.Worker]core.WorkerStats, len(s.Workers))
	for _, ws := range s.Workers {
		m[ws.Worker] = ws
	}
	return m
}

func (x *Indexer) info(w *worker, stats map[core.Worker]core.WorkerStats, disagree map[core.Worker]bool) WorkerInfo {
	x.mu.RLock()
	spec := w.spec
	rs := slices.Clone(w.sorted)
	x.mu.RUnlock()
	info := WorkerInfo{Spec: spec, Healthy: w.healthy.Load(), Ranks: make([]RankInfo, 0, len(rs))}
	for _, r := range rs {
		ri := r.info()
		if s, ok := stats[r.w]; ok {
			ri.Blocks, ri.Unstable, ri.Violations = s.Blocks, s.Unstable, s.Violations
		}
		ri.EngineHash.Disagrees = disagree[r.w] && ri.EngineHash.Verdict == VerdictVerified
		info.Ranks = append(info.Ranks, ri)
	}
	return info
}

// Models returns the keys of every index, sorted.
func (x *Indexer) Models() []ModelKey {
	x.mu.RLock()
	keys := make([]ModelKey, 0, len(x.indexes))
	for k := range x.indexes {
		keys = append(keys, k)
	}
	x.mu.RUnlock()
	slices.SortFunc(keys, compareKeys)
	return keys
}

func compareKeys(a, b ModelKey) int {
	if c := cmp.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	return cmp.Compare(a.Tenant, b.Tenant)
}

// rankFor returns the worker and rank state of (id, dpRank), creating
// the rank when the worker is known but the rank is new (an engine with
// more ranks than registered). Unknown workers give nil.
func (x *Indexer) rankFor(id uint64, dpRank uint32) (*worker, *rank) {
	x.mu.RLock()
	w, ok := x.workers[id]
	var r *rank
	if ok {
		r = w.ranks[dpRank]
	}
	x.mu.RUnlock()
	if !ok || r != nil {
		return w, r
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.workers[id] != w { // removed or replaced meanwhile
		return nil, nil
	}
	if r = w.ranks[dpRank]; r == nil {
		r = newRank(core.Worker{ID: id, DPRank: dpRank}, x.opts.Now())
		x.addRankLocked(w, r)
	}
	return w, r
}

// sourceRank resolves a stream's worker rank, registering the worker from
// the Source when it is unknown (a bound endpoint's topic named it). A
// rank or a worker refused (see Bounds in caps.go) gives nil: its events
// (n of them) are counted and logged.
func (x *Indexer) sourceRank(src ingest.Source, dpRank uint32, n int) (*worker, *rank) {
	w, r, err := x.eventRank(src.WorkerID, dpRank, true)
	if w == nil && err == nil {
		spec := WorkerSpec{WorkerID: src.WorkerID, Model: src.Model, Endpoint: src.Endpoint, Topic: src.Topic, DPSize: 1}
		// Registered meanwhile (the server's AddWorker racing this stream):
		// keep that full spec, do not overwrite it with this partial one.
		if _, err := x.addWorker(spec, false); err != nil {
			x.refuse(RefusedLabel, n, "a worker could not be registered from its event stream",
				"worker_id", src.WorkerID, "endpoint", src.Endpoint, "topic", clip(src.Topic), "error", err)
			return nil, nil
		}
		x.opts.Logger.Info("kvrouter: worker registered from its event stream",
			"worker_id", src.WorkerID, "model", src.Model, "endpoint", src.Endpoint, "topic", src.Topic)
		w, r, err = x.eventRank(src.WorkerID, dpRank, true)
	}
	if err != nil {
		x.refuse(RefusedRankRange, n, "an engine stream named a dp_rank its worker does not have",
			"worker_id", src.WorkerID, "dp_rank", dpRank, "stream_dp_rank", src.DPRank, "endpoint", src.Endpoint,
			"error", err, "fix", "register the worker with the dp_size its engine runs (POST /v1/workers dp_size, or Dynamo /register per dp_rank)")
		return nil, nil
	}
	return w, r
}

// now is the indexer's clock.
func (x *Indexer) now() time.Time { return x.opts.Now() }
