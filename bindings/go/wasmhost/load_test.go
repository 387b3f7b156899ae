package wasmhost

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadFileAndVersions(t *testing.T) {
	ctx := context.Background()
	// The default config: compiled code from the user cache directory,
	// which sharedModule (or an earlier run) filled.
	m, err := LoadFile(ctx, modulePath(t), Config{})
	require.NoError(t, err)
	defer m.Close(ctx)
	v, err := m.Version()
	require.NoError(t, err)
	assert.Equal(t, core.Version, v)
	sv, err := m.SpecVersion()
	require.NoError(t, err)
	assert.Equal(t, core.SpecVersion, sv)
	n, err := m.BlockCount(13, 4, true)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	_, err = m.BlockCount(13, 0, false)
	assert.ErrorIs(t, err, core.ErrInvalidArgument)
}

// emptyModule is the smallest valid module: wazero compiles (and caches)
// it, then Load rejects it for lacking kvhash's exports. It lets the cache
// tests run without compiling the real module from scratch (10-20 s under
// the race detector).
var emptyModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// cacheEntries lists the files under dir.
func cacheEntries(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	files := map[string]time.Time{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[path] = info.ModTime()
		return nil
	}))
	return files
}

func TestCacheDirIsWrittenThenReused(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache") // created by Load
	_, err := Load(ctx, emptyModule, Config{CacheDir: dir})
	require.ErrorContains(t, err, "lacks exports")
	first := cacheEntries(t, dir)
	require.NotEmpty(t, first, "compiled code must be written to the configured directory")
	// Backdate the entries: a second start that recompiled would rewrite
	// them with a new time; one that reused them leaves them alone.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for path := range first {
		require.NoError(t, os.Chtimes(path, old, old))
	}
	_, err = Load(ctx, emptyModule, Config{CacheDir: dir})
	require.ErrorContains(t, err, "lacks exports")
	second := cacheEntries(t, dir)
	require.Len(t, second, len(first))
	for path, mtime := range second {
		assert.True(t, mtime.Equal(old), "%s was rewritten: the second start did not reuse the cache", path)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	sharedModule(t) // loaded with Config{}: the default directory
	dir, err := defaultCacheDir()
	if err != nil {
		// No user cache directory: Load must still have worked, from
		// memory (sharedModule checked that).
		return
	}
	base, err := os.UserCacheDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(base, "kvhash", "wazero"), dir)
	assert.NotEmpty(t, cacheEntries(t, dir))
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	_, err := LoadFile(ctx, filepath.Join(t.TempDir(), "missing.wasm"), Config{NoDiskCache: true})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = Load(ctx, []byte("not wasm"), Config{NoDiskCache: true})
	assert.ErrorContains(t, err, "compile module")
	// A valid module without kvhash's exports.
	_, err = Load(ctx, emptyModule, Config{NoDiskCache: true})
	assert.ErrorContains(t, err, "lacks exports")
	// A cache "directory" that is a file cannot be used.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = Load(ctx, moduleBytes(t), Config{CacheDir: file})
	assert.ErrorContains(t, err, "compilation cache")
}

func TestClosedModule(t *testing.T) {
	ctx := context.Background()
	m, err := Load(ctx, moduleBytes(t), Config{})
	require.NoError(t, err)
	require.NoError(t, m.Close(ctx))
	require.NoError(t, m.Close(ctx), "Close is idempotent")
	_, err = m.BlockHashes(publicTokens, 4, core.Options{})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = m.ChainStep(1, 2)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestErrorsCarryStatusAndMessage(t *testing.T) {
	m := sharedModule(t)
	dst := []uint64{1, 2}
	got, err := m.AppendBlockHashes(dst, publicTokens, 0, core.Options{})
	assert.Equal(t, []uint64{1, 2}, got)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, StatusInvalidArgument, e.Status)
	assert.Equal(t, "kvhash_block_hashes", e.Op)
	assert.Contains(t, e.Message, "block size")
	assert.ErrorIs(t, err, core.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "KVHASH_ERR_INVALID_ARGUMENT")

	_, err = m.BlockHashes(publicTokens, 4, core.Options{MMHashes: [][]uint64{nil, nil, nil, nil}})
	assert.ErrorIs(t, err, core.ErrInvalidArgument)
	// Multimodal hashes are sorted by the module: order does not matter.
	a, err := m.BlockHashes(publicTokens, 4, core.Options{MMHashes: [][]uint64{{3, 1, 2}}})
	require.NoError(t, err)
	b, err := m.BlockHashes(publicTokens, 4, core.Options{MMHashes: [][]uint64{{2, 3, 1}}})
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.NotEqual(t, publicBlocks[0], a[0])
	assert.Equal(t, publicBlocks[1:], a[1:])
}

func TestLargePromptGrowsScratch(t *testing.T) {
	m := sharedModule(t)
	tokens := make([]uint32, 1<<17)
	for i := range tokens {
		tokens[i] = uint32(i) * 2654435761
	}
	blocks, err := m.BlockHashes(tokens, 16, core.Options{LoraName: "lora", CacheNamespace: "tenant"})
	require.NoError(t, err)
	require.Len(t, blocks, len(tokens)/16)
	seq, err := m.SequenceHashes(blocks)
	require.NoError(t, err)
	step, err := m.ChainStep(seq[999], blocks[1000])
	require.NoError(t, err)
	assert.Equal(t, seq[1000], step)
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "KVHASH_ERR_OUT_OF_BOUNDS", StatusOutOfBounds.String())
	assert.Equal(t, "KVHASH_ERR_NO_MEMORY", StatusNoMemory.String())
	assert.Equal(t, "kvhash status -99", Status(-99).String())
}
