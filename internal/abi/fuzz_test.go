package abi

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
)

// inRange reports whether st is a status an export may return.
func inRange(st Status) bool { return st <= StatusOK && st >= MinStatus }

// FuzzBlockHashes feeds the hashing entry points (kvhash_block_hashes and
// kvhash_block_and_sequence_hashes) arbitrary arguments as a foreign
// caller could: they must never panic, must answer with a status in range,
// must agree with each other, and when they succeed must agree with core.
func FuzzBlockHashes(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}, int64(4), "", "", false, []byte{}, uint16(4))
	f.Add([]byte{}, int64(0), "lora", "ns", true, []byte{1, 2}, uint16(0))
	f.Add(make([]byte, 64), int64(-3), "", "x", false, []byte{3}, uint16(1))
	f.Add(make([]byte, 200), int64(3), "é", "", true, []byte{0, 2, 9}, uint16(100))
	f.Fuzz(func(t *testing.T, raw []byte, blockSize int64, lora, ns string, eagle bool, mm []byte, outCap uint16) {
		tokens := make([]uint32, len(raw)/4)
		for i := range tokens {
			tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
		}
		// Each mm byte is one block's entry: its low bits count the hashes.
		counts := make([]uint32, len(mm))
		perBlock := make([][]uint64, len(mm))
		var flat []uint64
		for i, b := range mm {
			counts[i] = uint32(b % 4)
			for j := range counts[i] {
				h := uint64(b)<<32 | uint64(j)
				flat = append(flat, h)
				perBlock[i] = append(perBlock[i], h)
			}
		}
		out := make([]uint64, outCap)
		n, err := BlockHashes(HashInput{tokens, blockSize, lora, ns, eagle, flat, counts}, out)
		st := StatusOf(err)
		require.True(t, inRange(st), "status %d", st)
		require.NotEqual(t, StatusInternal, st, "%v", err)

		want, werr := core.BlockHashes(tokens, int(blockSize), core.Options{
			LoraName: lora, CacheNamespace: ns, Eagle: eagle, MMHashes: perBlock})
		switch st {
		case StatusOK:
			require.NoError(t, werr)
			assert.Equal(t, len(want), n)
			if n > 0 {
				assert.Equal(t, want, out[:n])
			}
		case StatusBufferTooSmall:
			require.NoError(t, werr)
			assert.Equal(t, len(want), n)
			assert.Greater(t, n, int(outCap))
		default:
			assert.Equal(t, StatusInvalidArgument, st)
			assert.Error(t, werr)
			assert.Zero(t, n)
		}

		local, seq := make([]uint64, outCap), make([]uint64, outCap)
		fn, ferr := BlockAndSequenceHashes(HashInput{tokens, blockSize, lora, ns, eagle, flat, counts}, local, seq)
		require.Equal(t, st, StatusOf(ferr), "%v vs %v", err, ferr)
		require.Equal(t, n, fn)
		if st == StatusOK && n > 0 {
			assert.Equal(t, want, local[:n])
			assert.Equal(t, core.SequenceHashes(want), seq[:n])
		}
	})
}

// FuzzApplyJSON feeds arbitrary bytes to both JSON entry points of an
// index in every mode: never a panic, always a status in range, and the
// index stays queryable.
func FuzzApplyJSON(f *testing.F) {
	f.Add([]byte(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}`), uint64(1), int32(1))
	f.Add([]byte(`{"event_id":2,"data":{"removed":{"block_hashes":[1,18446744073709551615]}}}`), uint64(2), int32(2))
	f.Add([]byte(`{"event_id":3,"data":"cleared"}`), uint64(3), int32(0))
	f.Add([]byte(`{"worker_id":4,"storage_tier":"disk","event":{"event_id":1,"data":"cleared"}}`), uint64(4), int32(1))
	f.Add([]byte(`{"event_id":1,"data":{"stored":{"parent_hash":1,"blocks":[{"block_hash":1,"tokens_hash":1,"mm_extra_info":{"mm_objects":[{"mm_hash":5,"offsets":[[0,4]]}]}}]}}}`), uint64(5), int32(2))
	f.Add([]byte(`{"event_id":`), uint64(0), int32(7))
	f.Add([]byte{0xff, 0x00, '"'}, uint64(0), int32(-1))
	f.Fuzz(func(t *testing.T, data []byte, workerID uint64, mode int32) {
		h, err := IndexNew(1)
		require.NoError(t, err)
		defer IndexFree(h)
		seed := []byte(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}}}`)
		require.NoError(t, IndexApplyJSON(h, workerID, seed))

		st := StatusOf(IndexSetMode(h, mode))
		require.Contains(t, []Status{StatusOK, StatusInvalidArgument}, st)

		for _, err := range []error{
			IndexApplyJSON(h, workerID, data),
			IndexApplyRouterEventJSON(h, data),
		} {
			st := StatusOf(err)
			require.True(t, inRange(st), "status %d", st)
			require.NotEqual(t, StatusInternal, st, "%v", err)
			require.NotEqual(t, StatusOutOfBounds, st)
		}

		buf := make([]byte, 1<<16)
		_, err = IndexStatsJSON(h, buf)
		require.NoError(t, err)
		_, err = IndexDumpJSONL(h, buf)
		require.NoError(t, err)
		ids, ranks, scores, sizes := make([]uint64, 64), make([]uint32, 64), make([]uint32, 64), make([]uint64, 64)
		_, err = IndexFindMatches(h, []uint64{2}, false, ids, ranks, scores, sizes)
		require.NoError(t, err)
	})
}
