package kvmock

import (
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncoderMatchesMsgspec holds kvmock's batches byte for byte to what
// msgspec (vLLM's encoder) writes for the same events, in both event
// layouts and both hash formats.
func TestEncoderMatchesMsgspec(t *testing.T) {
	py, err := filepath.Abs("../../build/venv/bin/python")
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		skipOrFail(t, "no Python venv at %s (make venv builds it): %v", py, err)
	}
	out, err := exec.Command(py, "testdata/msgspec_batch.py").Output()
	require.NoError(t, err, "msgspec_batch.py")
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, hexPayload, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		want[name] = hexPayload
	}
	require.Len(t, want, 4)

	first := []Digest{mkDigest(1, 0xF0), mkDigest(2, 0)}
	events := []Event{
		{Kind: EventBlockStored, Digests: first, Parent: ptr(digests(0x77)[0]), Tokens: seqTokens(300, 8)},
		{Kind: EventBlockStored, Digests: digests(3), Tokens: seqTokens(1, 4)},
		{Kind: EventBlockStored, Digests: digests(4, 5), Parent: ptr(digests(3)[0]), Tokens: seqTokens(0, 8),
			LoraName: "adapter-a", LoraID: 1, ExtraKeys: [][]string{{"adapter-a", "tenant-7"}, {"adapter-a"}}},
		{Kind: EventBlockStored, Digests: digests(6), Tokens: []uint32{9, 9, 9, 9}, ExtraKeys: [][]string{nil}},
		{Kind: EventBlockRemoved, Digests: digests(2)},
		{Kind: EventAllBlocksCleared},
	}
	for _, format := range []EventFormat{EventFormatMap, EventFormatArray} {
		for _, hashes := range []HashFormat{HashFormatInt, HashFormatBytes} {
			name := string(format) + "/" + string(hashes)
			got, err := wireEncoder{format: format, hashes: hashes, blockSize: 4}.encodeBatch(1.5, events, 0)
			require.NoError(t, err)
			assert.Equal(t, want[name], hex.EncodeToString(got), name)
		}
	}
}
