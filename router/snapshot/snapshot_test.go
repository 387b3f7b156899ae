package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

const bs = 4

func tokens(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

func u64p(v uint64) *uint64 { return &v }

// fleet returns an indexer with two models, dp ranks, a salted chain, a
// skipped multimodal block, removals (so the dump has holes) and seqs.
func fleet(t testing.TB) *indexer.Indexer {
	t.Helper()
	ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn})
	require.NoError(t, err)
	for _, spec := range []indexer.WorkerSpec{
		{WorkerID: 1, Model: "llama", DPSize: 2, Endpoint: "tcp://127.0.0.1:5557", ReplayEndpoint: "tcp://127.0.0.1:5558", Topic: "kv", BaseURL: "http://127.0.0.1:8000", EngineHash: "auto"},
		{WorkerID: 2, Model: "llama"},
		{WorkerID: 3, Model: "qwen", Tenant: "acme"},
	} {
		_, err := ix.AddWorker(spec)
		require.NoError(t, err)
	}
	p := tokens(1, 16)
	send := func(id uint64, model string, rank uint32, seq uint64, evs ...ingest.Event) {
		ix.HandleBatch(ingest.Source{WorkerID: id, Model: model, DPRank: rank}, &ingest.Batch{Seq: seq, Events: evs})
	}
	st := func(parent *uint64, toks []uint32, hashes ...uint64) ingest.Event {
		return ingest.Event{Kind: ingest.BlockStored, ParentHash: parent, TokenIDs: toks, BlockSize: bs, BlockHashes: hashes}
	}
	salted := st(nil, p[:8], 1, 2)
	salted.ExtraKeys = [][]any{{"tenant-a"}}
	send(1, "llama", 1, 7, salted, st(u64p(2), p[8:], 3, 4))
	send(1, "llama", 0, 3, st(nil, p, 11, 12, 13, 14), ingest.Event{Kind: ingest.BlockRemoved, BlockHashes: []uint64{12}})
	mm := st(nil, tokens(90, 4), 50)
	mm.ExtraKeys = [][]any{{[]any{"img", int64(0)}}}
	send(2, "llama", 0, 0, mm, st(nil, p[:8], 21, 22))
	send(3, "qwen", 0, 12, st(nil, p[:4], 31))
	global := uint32(4) // an engine numbering its ranks fleet-wide, on stream 0
	ix.HandleBatch(ingest.Source{WorkerID: 3, Model: "qwen"}, &ingest.Batch{Seq: 13, DPRank: &global, Events: []ingest.Event{st(nil, p[4:8], 32)}})
	return ix
}

func TestRoundTrip(t *testing.T) {
	ix := fleet(t)
	path := filepath.Join(t.TempDir(), "kvrouter.snap")
	require.NoError(t, Save(path, ix))

	restored, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn})
	require.NoError(t, err)
	require.NoError(t, Load(path, restored))
	assert.Equal(t, ix.Export(), restored.Export())
	for _, key := range ix.Models() {
		want, err := ix.Dump(key)
		require.NoError(t, err)
		got, err := restored.Dump(key)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%v", key)
	}
	info, ok := restored.Worker(1)
	require.True(t, ok)
	assert.Equal(t, uint64(7), info.Ranks[1].LastSeq)
	assert.Equal(t, "http://127.0.0.1:8000", info.Spec.BaseURL)
	info, ok = restored.Worker(3)
	require.True(t, ok)
	require.Len(t, info.Ranks, 2)
	assert.Equal(t, uint64(13), info.Ranks[1].LastSeq)
	assert.Equal(t, uint32(0), info.Ranks[1].StreamRank)

	// Matching works on the restored index, salt included.
	local, err := restored.HashPrompt(tokens(1, 16), indexer.PromptOptions{CacheSalt: "tenant-a"})
	require.NoError(t, err)
	ov, err := restored.Overlaps(indexer.ModelKey{Model: "llama"}, local, false)
	require.NoError(t, err)
	assert.Equal(t, []indexer.Overlap{{Worker: core.Worker{ID: 1, DPRank: 1}, Blocks: 4, TreeSize: 4}}, ov)

	// No temporary file is left beside the snapshot.
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestEncodeIsDeterministic(t *testing.T) {
	ix := fleet(t)
	a, err := Encode(ix.Export())
	require.NoError(t, err)
	b, err := Encode(ix.Export())
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

// reseal rewrites a snapshot's checksum after a deliberate edit, so the
// test reaches the check behind it.
func reseal(data []byte) []byte {
	body := data[:len(data)-sumSize]
	sum := sha256.Sum256(body)
	return append(append([]byte{}, body...), sum[:]...)
}

func TestBadFilesAreErrors(t *testing.T) {
	good, err := Encode(fleet(t).Export())
	require.NoError(t, err)
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, good...)) }
	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrForeign, "header"},
		{"another format", []byte(`{"json": "maybe"}`), ErrForeign, "header"},
		{"header only", good[:headerSize], ErrCorrupt, "truncated"},
		{"truncated", good[:len(good)-1], ErrCorrupt, "payload"},
		{"appended", append(append([]byte{}, good...), 0), ErrCorrupt, "payload"},
		{"flipped bit", edit(func(b []byte) []byte { b[headerSize+3] ^= 1; return b }), ErrCorrupt, "checksum"},
		{"flipped checksum", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorrupt, "checksum"},
		{"newer version", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], Version+1); return reseal(b) }), ErrForeign, "version"},
		{"other block size", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 16); return reseal(b) }), ErrForeign, "block size 16"},
		{"overlong varint", func() []byte {
			b := append([]byte{}, good[:headerSize]...)
			b = append(b, 0x80, 0x00, 0, 0) // 0 workers, spelled in two bytes; 0 indexes; 0 ranks
			binary.LittleEndian.PutUint64(b[16:], 4)
			return reseal(append(b, make([]byte, sumSize)...))
		}(), ErrCorrupt, "varint"},
		{"resealed garbage", edit(func(b []byte) []byte { b[headerSize] = 0xff; b[headerSize+1] = 0xff; return reseal(b) }), ErrCorrupt, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, bs)
			require.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestLoadFailuresLeaveTheIndexerEmpty(t *testing.T) {
	dir := t.TempDir()
	fresh := func() *indexer.Indexer {
		ix, err := indexer.New(indexer.Options{BlockSize: bs, Mode: core.ModeWarn})
		require.NoError(t, err)
		return ix
	}
	ix := fresh()
	err := Load(filepath.Join(dir, "absent"), ix)
	assert.True(t, errors.Is(err, os.ErrNotExist))

	path := filepath.Join(dir, "snap")
	require.NoError(t, Save(path, fleet(t)))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600))
	ix = fresh()
	assert.ErrorIs(t, Load(path, ix), ErrCorrupt)
	assert.Empty(t, ix.Workers())

	// A snapshot of a router at another block size.
	other, err := indexer.New(indexer.Options{BlockSize: 16})
	require.NoError(t, err)
	_, err = other.AddWorker(indexer.WorkerSpec{WorkerID: 1, Model: "m"})
	require.NoError(t, err)
	require.NoError(t, Save(path, other))
	ix = fresh()
	assert.ErrorIs(t, Load(path, ix), ErrForeign)
	assert.Empty(t, ix.Workers())

	// Overwriting keeps the old file whole until the new one is in place:
	// a failed write (into a missing directory) changes nothing.
	assert.Error(t, Write(filepath.Join(dir, "missing", "snap"), fleet(t).Export()))
}
