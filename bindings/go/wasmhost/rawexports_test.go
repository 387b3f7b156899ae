package wasmhost

import (
	"context"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"
)

// Public vector: tokens 1..12, block size 4.
var (
	publicTokens = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	publicBlocks = []uint64{14643705804678351452, 16777012769546811212, 483935686894639516}
	publicSeq    = []uint64{14643705804678351452, 4945711292740353085, 12583592247330656132}
)

// stillWorks hashes the public vector on the same instance.
func stillWorks(t *testing.T, in *instance) {
	t.Helper()
	blocks, err := in.blockHashes(nil, publicTokens, 4, core.Options{})
	require.NoError(t, err)
	require.Equal(t, publicBlocks, blocks)
	seq, err := in.sequenceHashes(nil, blocks)
	require.NoError(t, err)
	require.Equal(t, publicSeq, seq)
}

// rawCall calls an export by name with raw arguments, bypassing every
// check of this package, and returns its first result.
func rawCall(t *testing.T, in *instance, name string, args ...uint64) uint64 {
	t.Helper()
	f := in.mod.ExportedFunction(name)
	require.NotNil(t, f, name)
	res, err := f.Call(context.Background(), args...)
	require.NoError(t, err, "%s trapped: bad input must be a status, never a trap", name)
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

func rawStatus(t *testing.T, in *instance, name string, args ...uint64) Status {
	t.Helper()
	return Status(api.DecodeI32(rawCall(t, in, name, args...)))
}

func i64(v int64) uint64 { return uint64(v) }

// TestRawExportsBadPointers passes out-of-range pointers and lengths
// straight to the exports: each must be an error status (not a trap, not a
// write outside the allocation), and the instance must hash correctly
// afterwards.
func TestRawExportsBadPointers(t *testing.T) {
	m := sharedModule(t)
	require.NoError(t, m.withInstance(func(in *instance) error {
		alloc := func(n uint64) uint64 {
			p := rawCall(t, in, "kvhash_alloc", n)
			require.NotZero(t, p)
			return p
		}
		tok, out, outLen := alloc(16), alloc(32), alloc(8)
		require.True(t, in.mem.Write(uint32(tok), []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}))
		memEnd := uint64(in.mem.Size())
		const far = 0xfffffff0

		// kvhash_block_hashes(tokens, n, bs, lora, loraLen, ns, nsLen, eagle, mm, counts, mmBlocks, out, cap, outLen)
		tests := []struct {
			name string
			args []uint64
			want Status
		}{
			{"tokens past the end of memory", []uint64{far, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"tokens at the last bytes of memory", []uint64{memEnd - 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"tokens in memory but in no allocation", []uint64{8, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"tokens length past the allocation", []uint64{tok, 1000, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"tokens length 2^32-1", []uint64{tok, 0xffffffff, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"NULL tokens with a length", []uint64{0, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusInvalidArgument},
			{"NULL out_len", []uint64{tok, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, 0}, StatusInvalidArgument},
			{"out past the end of memory", []uint64{tok, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, far, 4, outLen}, StatusOutOfBounds},
			{"out capacity past the allocation", []uint64{tok, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, out, 100000, outLen}, StatusOutOfBounds},
			{"lora pointer bogus", []uint64{tok, 4, 4, far, 100, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"namespace length past the allocation", []uint64{tok, 4, 4, 0, 0, tok, 17, 0, 0, 0, 0, out, 4, outLen}, StatusOutOfBounds},
			{"mm counts pointer bogus", []uint64{tok, 4, 4, 0, 0, 0, 0, 0, 0, far, 1, out, 4, outLen}, StatusOutOfBounds},
			{"block size 0", []uint64{tok, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusInvalidArgument},
			{"block size -1", []uint64{tok, 4, i64(-1), 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusInvalidArgument},
			{"block size min int64", []uint64{tok, 4, i64(-1 << 63), 0, 0, 0, 0, 0, 0, 0, 0, out, 4, outLen}, StatusInvalidArgument},
			{"out too small", []uint64{tok, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, out, 1, outLen}, StatusBufferTooSmall},
		}
		for _, tt := range tests {
			t.Run("kvhash_block_hashes/"+tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, rawStatus(t, in, "kvhash_block_hashes", tt.args...))
				assert.NotEmpty(t, in.lastErrorMessage())
				stillWorks(t, in)
			})
		}

		others := []struct {
			name string
			call func(t *testing.T) uint64
			ok   func(r uint64) bool
		}{
			{"kvhash_sequence_hashes input bogus", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_sequence_hashes", far, 2, out, 4, outLen)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_sequence_hashes NULL out_len", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_sequence_hashes", out, 2, out, 2, 0)
			}, isStatus(StatusInvalidArgument)},
			// (tokens, n, bs, lora, loraLen, ns, nsLen, eagle, mm, counts, mmBlocks, outLocal, outSequence, cap, outLen)
			{"kvhash_block_and_sequence_hashes NULL out_sequence", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_block_and_sequence_hashes", tok, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, out, 0, 4, outLen)
			}, isStatus(StatusInvalidArgument)},
			{"kvhash_block_and_sequence_hashes out_sequence past its allocation", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_block_and_sequence_hashes", tok, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, out, outLen, 4, outLen)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_block_and_sequence_hashes out_sequence bogus", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_block_and_sequence_hashes", tok, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, out, far, 4, outLen)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_block_count bogus out", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_block_count", 12, 4, 0, far)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_last_error bogus buffer", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_last_error", far, 64)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_version buffer in no allocation", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_version", 8, 64)
			}, isStatus(StatusOutOfBounds)},
			{"kvhash_seed bogus name", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_seed", far, 10, 0, 0)
			}, func(uint64) bool { return true }},
			{"kvhash_free of a pointer never allocated", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_free", far)
			}, func(uint64) bool { return true }},
			{"kvhash_free twice", func(t *testing.T) uint64 {
				p := rawCall(t, in, "kvhash_alloc", 8)
				rawCall(t, in, "kvhash_free", p)
				return rawCall(t, in, "kvhash_free", p)
			}, func(uint64) bool { return true }},
			{"kvhash_alloc of 4 GiB", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_alloc", 0xffffffff)
			}, func(r uint64) bool { return r == 0 }},
			{"kvhash_index_free of an unknown handle", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_index_free", 987654321)
			}, isStatus(StatusUnknownHandle)},
			{"kvhash_index_remove_worker of handle 0", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_index_remove_worker", 0, 1)
			}, isStatus(StatusUnknownHandle)},
			{"kvhash_index_find_matches of an unknown handle", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_index_find_matches", 424242, 0, 0, 0, out, out, out, out, 0, outLen)
			}, isStatus(StatusUnknownHandle)},
			{"kvhash_index_new with a bad mode", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_index_new", 7, outLen)
			}, isStatus(StatusInvalidArgument)},
			{"kvhash_index_new with a bogus out_handle", func(t *testing.T) uint64 {
				return rawCall(t, in, "kvhash_index_new", 0, far)
			}, isStatus(StatusOutOfBounds)},
		}
		for _, tt := range others {
			t.Run(tt.name, func(t *testing.T) {
				r := tt.call(t)
				assert.True(t, tt.ok(r), "result %d (as status %s)", r, Status(api.DecodeI32(r)))
				stillWorks(t, in)
			})
		}
		for _, p := range []uint64{tok, out, outLen} {
			rawCall(t, in, "kvhash_free", p)
		}
		return nil
	}))
}

func isStatus(want Status) func(uint64) bool {
	return func(r uint64) bool { return Status(api.DecodeI32(r)) == want }
}
