package abi

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newIndex(t *testing.T, mode int32) uint64 {
	t.Helper()
	h, err := IndexNew(mode)
	require.NoError(t, err)
	t.Cleanup(func() { _ = IndexFree(h) })
	return h
}

type matches struct {
	ids    []uint64
	ranks  []uint32
	scores []uint32
	sizes  []uint64
}

func findMatches(t *testing.T, h uint64, q []uint64, capacity int) (matches, int, error) {
	t.Helper()
	m := matches{make([]uint64, capacity), make([]uint32, capacity), make([]uint32, capacity), make([]uint64, capacity)}
	n, err := IndexFindMatches(h, q, false, m.ids, m.ranks, m.scores, m.sizes)
	if err == nil {
		m = matches{m.ids[:n], m.ranks[:n], m.scores[:n], m.sizes[:n]}
	}
	return m, n, err
}

func TestIndexStoredArraysAndMatches(t *testing.T) {
	h := newIndex(t, 1)
	// Worker 1 rank 0 holds the public prompt's three blocks; worker 2
	// rank 1 the first one; worker 3 holds the second block at the root.
	require.NoError(t, IndexApplyStored(h, 1, 0, 1, false, 0, []uint64{100, 101, 102}, publicLocal))
	require.NoError(t, IndexApplyStored(h, 2, 1, 1, false, 0, []uint64{200}, publicLocal[:1]))
	require.NoError(t, IndexApplyStored(h, 3, 0, 1, false, 0, []uint64{300}, publicLocal[1:2]))
	require.NoError(t, IndexApplyStored(h, 2, 1, 2, true, 200, []uint64{201}, publicLocal[1:2]))

	m, n, err := findMatches(t, h, publicLocal, 8)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []uint64{1, 2}, m.ids)
	assert.Equal(t, []uint32{0, 1}, m.ranks)
	assert.Equal(t, []uint32{3, 2}, m.scores)
	assert.Equal(t, []uint64{3, 2}, m.sizes)

	_, n, err = findMatches(t, h, publicLocal, 1)
	assert.Equal(t, StatusBufferTooSmall, StatusOf(err))
	assert.Equal(t, 2, n)

	ids, ranks := make([]uint64, 3), make([]uint32, 3)
	n, err = IndexWorkers(h, ids, ranks)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3}, ids[:n])
	assert.Equal(t, []uint32{0, 1, 0}, ranks[:n])
	n, err = IndexWorkers(h, ids[:2], ranks[:2])
	assert.Equal(t, StatusBufferTooSmall, StatusOf(err))
	assert.Equal(t, 3, n)

	// Removing, clearing and dropping workers change the matches.
	require.NoError(t, IndexApplyRemoved(h, 1, 0, 3, []uint64{102}))
	m, _, err = findMatches(t, h, publicLocal, 8)
	require.NoError(t, err)
	assert.Equal(t, []uint32{2, 2}, m.scores)
	require.NoError(t, IndexClearWorker(h, 2, 1))
	require.NoError(t, IndexRemoveWorker(h, 1))
	m, _, err = findMatches(t, h, publicLocal, 8)
	require.NoError(t, err)
	assert.Empty(t, m.ids)
	require.NoError(t, IndexClearAllBlocks(h, 3))
	n, err = IndexWorkers(h, ids, ranks)
	require.NoError(t, err)
	assert.Equal(t, []uint64{2, 3}, ids[:n], "cleared workers stay known, removed ones leave")
}

func TestIndexApplyStoredLengthsDisagree(t *testing.T) {
	h := newIndex(t, 1)
	err := IndexApplyStored(h, 1, 0, 1, false, 0, []uint64{1, 2}, []uint64{1})
	assert.Equal(t, StatusInvalidArgument, StatusOf(err))
}

func TestIndexJSON(t *testing.T) {
	h := newIndex(t, 1)
	stored := `{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":100,"tokens_hash":14643705804678351452},{"block_hash":101,"tokens_hash":16777012769546811212}]}},"dp_rank":0}`
	require.NoError(t, IndexApplyJSON(h, 7, []byte(stored)))
	routed := `{"worker_id":8,"storage_tier":"host_pinned","event":{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":5,"tokens_hash":14643705804678351452}]}},"dp_rank":2}}`
	require.NoError(t, IndexApplyRouterEventJSON(h, []byte(routed)))

	m, _, err := findMatches(t, h, publicLocal, 4)
	require.NoError(t, err)
	assert.Equal(t, []uint64{7, 8}, m.ids)
	assert.Equal(t, []uint32{2, 1}, m.scores)

	tests := []struct {
		name string
		json string
		want Status
	}{
		{"not JSON", `{"event_id":`, StatusDecode},
		{"empty", ``, StatusDecode},
		{"unknown kind", `{"event_id":2,"data":{"evicted":{}}}`, StatusDecode},
		{"negative hash", `{"event_id":2,"data":{"removed":{"block_hashes":[-1]}}}`, StatusDecode},
		{"unknown block in warn mode", `{"event_id":2,"data":{"removed":{"block_hashes":[999]}}}`, StatusRejected},
		{"unknown parent", `{"event_id":3,"data":{"stored":{"parent_hash":999,"blocks":[{"block_hash":1,"tokens_hash":2}]}}}`, StatusRejected},
		{"cleared", `{"event_id":4,"data":"cleared","dp_rank":3}`, StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := IndexApplyJSON(h, 7, []byte(tt.json))
			assert.Equal(t, tt.want, StatusOf(err), "%v", err)
		})
	}
	err = IndexApplyRouterEventJSON(h, []byte(`{"worker_id":1,"storage_tier":"tape","event":{"event_id":1,"data":"cleared"}}`))
	assert.Equal(t, StatusDecode, StatusOf(err), "an unknown tier is refused: %v", err)
}

func TestIndexEnforceMode(t *testing.T) {
	h := newIndex(t, 2)
	require.NoError(t, IndexApplyStored(h, 1, 0, 1, false, 0, []uint64{100}, publicLocal[:1]))
	// The same content under another engine hash is a mismatch: counted in
	// warn mode, an error in enforce mode.
	err := IndexApplyStored(h, 2, 0, 1, false, 0, []uint64{999}, publicLocal[:1])
	assert.Equal(t, StatusRejected, StatusOf(err), "%v", err)

	require.NoError(t, IndexSetMode(h, 1))
	require.NoError(t, IndexApplyStored(h, 3, 0, 1, false, 0, []uint64{998}, publicLocal[:1]))

	buf := make([]byte, 4096)
	n, err := IndexStatsJSON(h, buf)
	require.NoError(t, err)
	stats := string(buf[:n])
	assert.Contains(t, stats, `"mode":"warn"`)
	assert.Contains(t, stats, `"hash_mismatch":2`)
}

func TestIndexDumpReplays(t *testing.T) {
	h := newIndex(t, 1)
	require.NoError(t, IndexApplyStored(h, 1, 0, 1, false, 0, []uint64{100, 101, 102}, publicLocal))
	require.NoError(t, IndexApplyStored(h, 2, 3, 1, false, 0, []uint64{200}, publicLocal[:1]))

	n, err := IndexDumpJSONL(h, nil)
	require.Equal(t, StatusBufferTooSmall, StatusOf(err))
	need := n
	small := bytes.Repeat([]byte{'#'}, need-1)
	n, err = IndexDumpJSONL(h, small)
	assert.Equal(t, StatusBufferTooSmall, StatusOf(err))
	assert.Equal(t, need, n)
	assert.Equal(t, bytes.Repeat([]byte{'#'}, need-1), small, "a buffer too small is left alone")

	buf := make([]byte, need)
	n, err = IndexDumpJSONL(h, buf)
	require.NoError(t, err)
	require.Equal(t, need, n)
	dump := string(buf)
	require.True(t, strings.HasSuffix(dump, "\n"))
	lines := strings.Split(strings.TrimSuffix(dump, "\n"), "\n")
	assert.GreaterOrEqual(t, len(lines), 2, "one line per router event")

	replay := newIndex(t, 1)
	for _, line := range lines {
		require.NoError(t, IndexApplyRouterEventJSON(replay, []byte(line)))
	}
	again := make([]byte, need)
	n, err = IndexDumpJSONL(replay, again)
	require.NoError(t, err)
	assert.Equal(t, dump, string(again[:n]))

	m, _, err := findMatches(t, replay, publicLocal, 4)
	require.NoError(t, err)
	assert.Equal(t, []uint32{3, 1}, m.scores)
}

func TestIndexStatsTooSmall(t *testing.T) {
	h := newIndex(t, 1)
	n, err := IndexStatsJSON(h, make([]byte, 3))
	assert.Equal(t, StatusBufferTooSmall, StatusOf(err))
	buf := make([]byte, n)
	m, err := IndexStatsJSON(h, buf)
	require.NoError(t, err)
	assert.Equal(t, n, m)
	assert.True(t, bytes.HasPrefix(buf, []byte(`{"mode":"warn"`)), string(buf))
}
