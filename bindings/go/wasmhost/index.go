package wasmhost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kvhash/kvhash/core"
	"github.com/tetratelabs/wazero/api"
)

// Index is a kvhash radix-tree index living in one module instance, with
// the method names of core.Index. Every call goes to the module; methods
// return errors where core's cannot fail, because the module can (an
// unknown handle after Free, a closed Module). Safe for concurrent use:
// calls are serialized on the instance.
type Index struct {
	m  *Module
	in *instance
	// handle is 0 after Free: the module never issues 0, so later calls
	// fail there with KVHASH_ERR_UNKNOWN_HANDLE. Guarded by in.mu.
	handle uint64
	// matchCap remembers the last match count, so a query usually needs
	// one call. Guarded by in.mu.
	matchCap int
}

// NewIndex creates an index in one of the module's instances, which it
// then pins. mode is core.ModeFromEnvironment (the module reads
// KVHASH_ENFORCE_ENGINE_HASH_STABILITY and
// DYN_KV_ENFORCE_ENGINE_HASH_STABILITY, passed from this process),
// core.ModeWarn or core.ModeEnforce.
func (m *Module) NewIndex(mode core.Mode) (*Index, error) {
	x := &Index{m: m, matchCap: 16}
	err := m.withInstance(func(in *instance) error {
		base, err := in.reserve(8)
		if err != nil {
			return err
		}
		if _, err := in.callStatus(in.fn.indexNew, uint64(mode), uint64(base)); err != nil {
			return err
		}
		h, ok := in.mem.ReadUint64Le(base)
		if !ok {
			return fmt.Errorf("kvhash: host buffer %d outside module memory", base)
		}
		x.in, x.handle = in, h
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// do runs f on the index's instance with its lock held.
func (x *Index) do(f func(in *instance) error) error {
	if x.m.closed.Load() {
		return ErrClosed
	}
	x.in.mu.Lock()
	defer x.in.mu.Unlock()
	if x.handle == 0 {
		return errFreed
	}
	return f(x.in)
}

// errFreed is the error of every call on an Index after its Free.
var errFreed = fmt.Errorf("%w: the index was freed (Index.Free was called)", ErrUnknownHandle)

// Free releases the index in the module. Later calls (and a second Free)
// fail with ErrUnknownHandle.
func (x *Index) Free() error {
	return x.do(func(in *instance) error {
		h := x.handle
		x.handle = 0
		_, err := in.callStatus(in.fn.indexFree, h)
		return err
	})
}

// SetMode changes how stability violations are handled.
func (x *Index) SetMode(mode core.Mode) error {
	return x.do(func(in *instance) error {
		_, err := in.callStatus(in.fn.indexSetMode, x.handle, uint64(mode))
		return err
	})
}

// Mode returns the effective mode (core.ModeWarn or core.ModeEnforce), as
// the module's stats report it.
func (x *Index) Mode() (core.Mode, error) {
	s, err := x.Stats()
	return s.Mode, err
}

// Apply applies one event of a worker. The event crosses into the module
// as Dynamo's JSON (core's encoding), the form the ABI takes.
func (x *Index) Apply(workerID uint64, ev core.Event) error {
	data, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	return x.ApplyJSON(workerID, data)
}

// ApplyJSON applies one event given as Dynamo's KvCacheEvent JSON.
func (x *Index) ApplyJSON(workerID uint64, data []byte) error {
	return x.do(func(in *instance) error {
		ptr, err := in.putBytes(data)
		if err != nil {
			return err
		}
		_, err = in.callStatus(in.fn.indexApplyJSON, x.handle, workerID, ptr, uint64(len(data)))
		return err
	})
}

// ApplyRouterEvent applies one router event.
func (x *Index) ApplyRouterEvent(ev core.RouterEvent) error {
	data, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	return x.ApplyRouterEventJSON(data)
}

// ApplyRouterEventJSON applies one router event given as JSON.
func (x *Index) ApplyRouterEventJSON(data []byte) error {
	return x.do(func(in *instance) error {
		ptr, err := in.putBytes(data)
		if err != nil {
			return err
		}
		_, err = in.callStatus(in.fn.indexApplyRouterEventJSON, x.handle, ptr, uint64(len(data)))
		return err
	})
}

// ApplyStored applies a "stored" event without JSON. The ABI carries each
// block's two hashes only; multimodal objects, which the index does not
// use, are not passed.
func (x *Index) ApplyStored(w core.Worker, eventID uint64, parentHash *uint64, blocks []core.StoredBlock) error {
	return x.do(func(in *instance) error {
		n := len(blocks)
		var l layout
		bhOff := l.add(8 * uint64(n))
		thOff := l.add(8 * uint64(n))
		base, err := in.reserve(l.size)
		if err != nil {
			return err
		}
		if n > 0 {
			bh, err := in.view(uint64(base)+bhOff, 8*uint64(n))
			if err != nil {
				return err
			}
			th, err := in.view(uint64(base)+thOff, 8*uint64(n))
			if err != nil {
				return err
			}
			for i, b := range blocks {
				putU64(bh[8*i:], b.BlockHash)
				putU64(th[8*i:], b.TokensHash)
			}
		}
		var hasParent, parent uint64
		if parentHash != nil {
			hasParent, parent = 1, *parentHash
		}
		_, err = in.callStatus(in.fn.indexApplyStored, x.handle, w.ID, uint64(w.DPRank), eventID,
			hasParent, parent, addr(base, bhOff, n), addr(base, thOff, n), uint64(n))
		return err
	})
}

// ApplyRemoved applies a "removed" event without JSON.
func (x *Index) ApplyRemoved(w core.Worker, eventID uint64, blockHashes []uint64) error {
	return x.do(func(in *instance) error {
		n := len(blockHashes)
		base, err := in.reserve(8 * uint64(n))
		if err != nil {
			return err
		}
		if err := in.writeU64s(addr(base, 0, n), blockHashes); err != nil {
			return err
		}
		_, err = in.callStatus(in.fn.indexApplyRemoved, x.handle, w.ID, uint64(w.DPRank), eventID,
			addr(base, 0, n), uint64(n))
		return err
	})
}

// ClearWorker drops one rank's blocks (the "cleared" event).
func (x *Index) ClearWorker(w core.Worker) error {
	return x.do(func(in *instance) error {
		_, err := in.callStatus(in.fn.indexClearWorker, x.handle, w.ID, uint64(w.DPRank))
		return err
	})
}

// ClearAllBlocks drops every rank's blocks of a worker; it stays known.
func (x *Index) ClearAllBlocks(workerID uint64) error {
	return x.do(func(in *instance) error {
		_, err := in.callStatus(in.fn.indexClearAllBlocks, x.handle, workerID)
		return err
	})
}

// RemoveWorker makes every rank of a worker leave the index.
func (x *Index) RemoveWorker(workerID uint64) error {
	return x.do(func(in *instance) error {
		_, err := in.callStatus(in.fn.indexRemoveWorker, x.handle, workerID)
		return err
	})
}

// FindMatches scores every worker rank holding a prefix of localHashes.
// Frequencies is empty, as in core: the index does not track access
// frequency (and the ABI has no field for it).
func (x *Index) FindMatches(localHashes []uint64, earlyExit bool) (core.OverlapScores, error) {
	matches, err := x.AppendMatches(nil, localHashes, earlyExit)
	if err != nil {
		return core.OverlapScores{}, err
	}
	out := core.OverlapScores{
		Scores:      make(map[core.Worker]uint32, len(matches)),
		TreeSizes:   make(map[core.Worker]uint64, len(matches)),
		Frequencies: []uint32{},
	}
	for _, m := range matches {
		out.Scores[m.Worker] = m.Score
		out.TreeSizes[m.Worker] = m.TreeSize
	}
	return out, nil
}

// AppendMatches appends the matches to dst, in the module's order (sorted
// by worker). On error dst is returned unchanged.
func (x *Index) AppendMatches(dst []core.Match, localHashes []uint64, earlyExit bool) ([]core.Match, error) {
	out := dst
	err := x.do(func(in *instance) error {
		n := len(localHashes)
		for range 2 {
			c := uint64(x.matchCap)
			var l layout
			outLenOff := l.add(8)
			qOff := l.add(8 * uint64(n))
			idsOff := l.add(8 * c)
			sizesOff := l.add(8 * c)
			ranksOff := l.add(4 * c)
			scoresOff := l.add(4 * c)
			base, err := in.reserve(l.size)
			if err != nil {
				return err
			}
			if err := in.writeU64s(addr(base, qOff, n), localHashes); err != nil {
				return err
			}
			b := uint64(base)
			st, err := in.callStatus(in.fn.indexFindMatches, x.handle, addr(base, qOff, n), uint64(n),
				boolArg(earlyExit), b+idsOff, b+ranksOff, b+scoresOff, b+sizesOff, c, b+outLenOff)
			count, rerr := in.readU32(b + outLenOff)
			if st == StatusBufferTooSmall && rerr == nil && uint64(count) > c {
				x.matchCap = int(count)
				continue
			}
			if err != nil {
				return err
			}
			if rerr != nil {
				return rerr
			}
			if uint64(count) > c {
				return fmt.Errorf("kvhash_index_find_matches: module reported %d matches for a capacity of %d", count, c)
			}
			v, err := in.view(b, l.size)
			if err != nil {
				return err
			}
			out = slices.Grow(out, int(count))
			for i := range uint64(count) {
				out = append(out, core.Match{
					Worker: core.Worker{
						ID:     getU64(v[idsOff+8*i:]),
						DPRank: getU32(v[ranksOff+4*i:]),
					},
					Score:    getU32(v[scoresOff+4*i:]),
					TreeSize: getU64(v[sizesOff+8*i:]),
				})
			}
			return nil
		}
		return fmt.Errorf("kvhash_index_find_matches: match count kept growing")
	})
	if err != nil {
		return dst, err
	}
	return out, nil
}

// Workers returns every known worker rank, sorted.
func (x *Index) Workers() ([]core.Worker, error) {
	var workers []core.Worker
	err := x.do(func(in *instance) error {
		c := uint64(16)
		for range 2 {
			var l layout
			outLenOff := l.add(8)
			idsOff := l.add(8 * c)
			ranksOff := l.add(4 * c)
			base, err := in.reserve(l.size)
			if err != nil {
				return err
			}
			b := uint64(base)
			st, err := in.callStatus(in.fn.indexWorkers, x.handle, b+idsOff, b+ranksOff, c, b+outLenOff)
			count, rerr := in.readU32(b + outLenOff)
			if st == StatusBufferTooSmall && rerr == nil && uint64(count) > c {
				c = uint64(count)
				continue
			}
			if err != nil {
				return err
			}
			if rerr != nil {
				return rerr
			}
			v, err := in.view(b, l.size)
			if err != nil {
				return err
			}
			workers = make([]core.Worker, min(uint64(count), c))
			for i := range workers {
				workers[i] = core.Worker{ID: getU64(v[idsOff+8*uint64(i):]), DPRank: getU32(v[ranksOff+4*uint64(i):])}
			}
			return nil
		}
		return fmt.Errorf("kvhash_index_workers: worker count kept growing")
	})
	return workers, err
}

// DumpJSONL returns the index as router events, one JSON object a line.
func (x *Index) DumpJSONL() ([]byte, error) {
	return x.bytesResult(func(in *instance) api.Function { return in.fn.indexDumpJSONL })
}

// Dump returns the index as router events; replaying them into an empty
// index rebuilds it. The events are decoded with core.DecodeRouterEvent.
func (x *Index) Dump() ([]core.RouterEvent, error) {
	data, err := x.DumpJSONL()
	if err != nil {
		return nil, err
	}
	var events []core.RouterEvent
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) == 0 {
			continue
		}
		ev, err := core.DecodeRouterEvent(line)
		if err != nil {
			return nil, fmt.Errorf("kvhash_index_dump_jsonl: %w", err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// StatsJSON returns the module's stats JSON (core.Stats.MarshalJSON's form).
func (x *Index) StatsJSON() ([]byte, error) {
	return x.bytesResult(func(in *instance) api.Function { return in.fn.indexStatsJSON })
}

// Stats returns the index's statistics, decoded from StatsJSON.
func (x *Index) Stats() (core.Stats, error) {
	data, err := x.StatsJSON()
	if err != nil {
		return core.Stats{}, err
	}
	var stats core.Stats
	if err := json.Unmarshal(data, &stats); err != nil {
		return core.Stats{}, fmt.Errorf("kvhash_index_stats_json: %w", err)
	}
	return stats, nil
}

// bytesResult runs a (handle, buf, cap, out_len) export, growing buf to
// the size the module asks for.
func (x *Index) bytesResult(pick func(in *instance) api.Function) ([]byte, error) {
	var out []byte
	err := x.do(func(in *instance) error {
		f := pick(in)
		c := uint64(4096)
		for range 2 {
			var l layout
			outLenOff := l.add(8)
			bufOff := l.add(c)
			base, err := in.reserve(l.size)
			if err != nil {
				return err
			}
			b := uint64(base)
			st, err := in.callStatus(f, x.handle, b+bufOff, c, b+outLenOff)
			n, rerr := in.readU32(b + outLenOff)
			if st == StatusBufferTooSmall && rerr == nil && uint64(n) > c {
				c = uint64(n)
				continue
			}
			if err != nil {
				return err
			}
			if rerr != nil {
				return rerr
			}
			v, err := in.view(b+bufOff, min(uint64(n), c))
			if err != nil {
				return err
			}
			out = bytes.Clone(v)
			return nil
		}
		return fmt.Errorf("%s: output kept growing", f.Definition().Name())
	})
	return out, err
}
