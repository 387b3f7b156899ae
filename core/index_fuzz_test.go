package core

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}`,
		`{"event_id":2,"data":{"stored":{"parent_hash":5,"start_position":3,"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[{"mm_hash":9,"offsets":[[0,4]]}]}}]}}}`,
		`{"event_id":3,"data":{"removed":{"block_hashes":[1,18446744073709551615]}},"dp_rank":1}`,
		`{"event_id":4,"data":"cleared","x":[{"\u00e9":null},true,-1.5e-3]}`,
		`{"worker_id":7,"storage_tier":"disk","event":{"event_id":1,"data":"cleared"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeEvent(data)
		if err != nil {
			require.ErrorIs(t, err, ErrDecode)
		} else {
			require.True(t, json.Valid(data), "accepted invalid JSON")
			out, err := ev.MarshalJSON()
			require.NoError(t, err)
			back, err := DecodeEvent(out)
			require.NoError(t, err)
			require.Equal(t, ev, back)
		}
		re, err := DecodeRouterEvent(data)
		if err != nil {
			require.ErrorIs(t, err, ErrDecode)
			return
		}
		require.True(t, json.Valid(data), "accepted invalid JSON")
		out, err := re.MarshalJSON()
		require.NoError(t, err)
		back, err := DecodeRouterEvent(out)
		require.NoError(t, err)
		require.Equal(t, re, back)
	})
}

// FuzzApply reads bytes as a stream of operations over a few workers and
// a small space of hashes (so that every rule collides with every other),
// applies them to the index and the model, and checks that they agree,
// that the index stays consistent, and that its dump rebuilds it.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x21, 0x30, 0x44, 0x50, 0x60, 0x12, 0x22, 0x31, 0x41, 0x03, 0x13, 0x23})
	f.Add([]byte("stored removed cleared and a few more bytes to read as operations"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Sections of one block put a clear of more than four names on
		// its sectioned path (index_clear.go) too.
		for _, cfg := range []struct {
			mode    Mode
			section int
		}{{ModeWarn, 0}, {ModeEnforce, 0}, {ModeWarn, 1}} {
			mode := cfg.mode
			x := NewIndex(IndexOptions{Mode: mode})
			x.writeSection = cfg.section
			m := newModel()
			m.enforce = mode == ModeEnforce
			r := byteReader{data: data}
			for id := uint64(1); !r.done(); id++ {
				op := r.op(id)
				applyBoth(t, x, m, op)
				q := r.hashes(1 + int(r.next()%6))
				requireSameMatches(t, x, m, q, r.next()%2 == 0, "fuzz")
			}
			require.NoError(t, checkInvariants(x))
			requireSameStats(t, m.stats(), x.Stats())
			y := replay(t, x.Dump())
			require.NoError(t, checkInvariants(y))
			require.Equal(t, x.Workers(), y.Workers())
			xs, ys := x.Stats(), y.Stats()
			require.Equal(t, xs.Nodes, ys.Nodes, "replayed dump: nodes")
			for i := range xs.Workers {
				require.Equal(t, xs.Workers[i].Blocks, ys.Workers[i].Blocks, "replayed dump: blocks of %v", xs.Workers[i].Worker)
			}
			r = byteReader{data: data}
			for !r.done() {
				q := r.hashes(1 + int(r.next()%6))
				require.Equal(t, x.AppendMatches(nil, q, false), y.AppendMatches(nil, q, false))
			}
		}
	})
}

type byteReader struct {
	data []byte
	pos  int
}

func (r *byteReader) done() bool { return r.pos >= len(r.data) }

func (r *byteReader) next() byte {
	if r.done() {
		return 0
	}
	r.pos++
	return r.data[r.pos-1]
}

// hashes reads n small hash values: externals and locals alike come
// from 0..7, so names and contents collide often.
func (r *byteReader) hashes(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(r.next() % 8)
	}
	return out
}

func (r *byteReader) op(id uint64) genOp {
	b := r.next()
	w := Worker{ID: uint64(b>>4) % 3, DPRank: uint32(b>>6) % 2}
	ev := Event{ID: id, DPRank: w.DPRank}
	switch b % 8 {
	case 0:
		ev.Kind = EventCleared
	case 1:
		return genOp{kind: opClearAll, workerID: w.ID}
	case 2:
		return genOp{kind: opRemoveWorker, workerID: w.ID}
	case 3, 4:
		ev.Kind = EventRemoved
		ev.BlockHashes = r.hashes(1 + int(r.next()%3))
	default:
		ev.Kind = EventStored
		if p := r.next(); p%3 != 0 {
			h := uint64(p % 8)
			ev.ParentHash = &h
		}
		n := 1 + int(r.next()%4)
		for range n {
			ev.Blocks = append(ev.Blocks, StoredBlock{BlockHash: uint64(r.next() % 8), TokensHash: uint64(r.next() % 4)})
		}
	}
	return genOp{kind: opEvent, workerID: w.ID, ev: ev}
}
