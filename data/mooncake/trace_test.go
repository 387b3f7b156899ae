package mooncaketrace

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVendoredTraceIsTheAttributedFile(t *testing.T) {
	sum := sha256.Sum256(Synthetic())
	assert.Equal(t, SHA256, hex.EncodeToString(sum[:]), "the vendored trace differs from the one ATTRIBUTION.md names")
}

func TestVendoredTraceParses(t *testing.T) {
	reqs, err := Requests()
	require.NoError(t, err)
	assert.Len(t, reqs, 3993)
	assert.Zero(t, reqs[0].Timestamp, "timestamps are relative to the first request")
}
