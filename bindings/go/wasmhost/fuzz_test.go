package wasmhost

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzBlockHashes checks the host's marshaling at its exported boundary
// (the block-hashing methods, separate and fused): for any input, the
// module's answer through the host must be native core's answer (the module is core compiled to WebAssembly; core is only
// the oracle here).
func FuzzBlockHashes(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}, 4, "", "", false, []byte{})
	f.Add([]byte{}, 0, "lora", "", true, []byte{})
	f.Add(make([]byte, 4*33), 16, "a", "tenant", true, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(make([]byte, 4*7), -3, "", "ns", false, []byte{})
	f.Add(make([]byte, 4*8), 1, "", "", false, make([]byte, 80))
	f.Fuzz(func(t *testing.T, raw []byte, blockSize int, lora, ns string, eagle bool, mm []byte) {
		m := sharedModule(t)
		tokens := make([]uint32, len(raw)/4)
		for i := range tokens {
			tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
		}
		opts := core.Options{LoraName: lora, CacheNamespace: ns, Eagle: eagle}
		// mm: each 9-byte record is (block count byte, one u64); a small
		// count byte makes some entries empty and some lists too long.
		for len(mm) >= 9 {
			n := int(mm[0] % 3)
			hashes := make([]uint64, n)
			for i := range hashes {
				hashes[i] = binary.LittleEndian.Uint64(mm[1:]) + uint64(i)
			}
			opts.MMHashes = append(opts.MMHashes, hashes)
			mm = mm[9:]
		}
		want, wantErr := core.BlockHashes(tokens, blockSize, opts)
		got, err := m.BlockHashes(tokens, blockSize, opts)
		if wantErr != nil {
			require.Error(t, err)
			assert.Equal(t, errors.Is(wantErr, core.ErrInvalidArgument), errors.Is(err, core.ErrInvalidArgument), "%v vs %v", wantErr, err)
			_, _, fusedErr := m.BlockAndSequenceHashes(tokens, blockSize, opts)
			assert.Equal(t, errors.Is(wantErr, core.ErrInvalidArgument), errors.Is(fusedErr, core.ErrInvalidArgument), "%v vs %v", wantErr, fusedErr)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, nonNil(want), nonNil(got))
		seq, err := m.SequenceHashes(got)
		require.NoError(t, err)
		assert.Equal(t, nonNil(core.SequenceHashes(want)), nonNil(seq))
		local, fusedSeq, err := m.BlockAndSequenceHashes(tokens, blockSize, opts)
		require.NoError(t, err)
		assert.Equal(t, nonNil(want), nonNil(local))
		assert.Equal(t, nonNil(seq), nonNil(fusedSeq))
		seed, err := m.Seed(lora, ns)
		require.NoError(t, err)
		assert.Equal(t, core.Seed(lora, ns), seed)
	})
}

// FuzzIndexApplyJSON feeds arbitrary bytes as an event: the module must
// answer with a status (never a trap), accept exactly what core's decoder
// accepts, and keep answering queries.
func FuzzIndexApplyJSON(f *testing.F) {
	f.Add(uint64(1), []byte(`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}`))
	f.Add(uint64(2), []byte(`{"event_id":2,"data":{"removed":{"block_hashes":[1,18446744073709551615]}},"dp_rank":1}`))
	f.Add(uint64(3), []byte(`{"event_id":3,"data":"cleared","dp_rank":0}`))
	f.Add(uint64(4), []byte(`{"event_id":`))
	f.Add(uint64(5), []byte{})
	f.Fuzz(func(t *testing.T, workerID uint64, data []byte) {
		x, err := sharedModule(t).NewIndex(core.ModeWarn)
		require.NoError(t, err)
		defer x.Free()
		_, decodeErr := core.DecodeEvent(data)
		err = x.ApplyJSON(workerID, data)
		if decodeErr != nil {
			assert.ErrorIs(t, err, core.ErrDecode)
		} else if err != nil {
			assert.NotErrorIs(t, err, core.ErrDecode)
			var e *Error
			require.ErrorAs(t, err, &e, "an event that decodes fails only with a module status")
		}
		_, err = x.FindMatches([]uint64{2}, false)
		require.NoError(t, err)
	})
}
