package enginehash

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// TestOracleVectors checks every committed vector three ways: the root; each
// block through BlockDigest with the oracle's explicit extra keys; and the
// whole prompt through Chain, which builds the extra keys itself.
func TestOracleVectors(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			root, err := c.root()
			require.NoError(t, err)
			assert.Equal(t, c.Root, root.String(), "root")

			tokens := c.tokens()
			parent := root
			for i, want := range c.Blocks {
				block := tokens[i*c.hashBlockSize() : (i+1)*c.hashBlockSize()]
				d, err := c.Scheme.LookaheadBlockDigest(parent, block, c.blockKeys(t, i), want.Lookahead)
				require.NoError(t, err, "block %d", i)
				require.Equal(t, want.Digest, d.String(), "block %d digest", i)
				require.Equal(t, want.eventU64(t), c.Scheme.WireID(d), "block %d wire id", i)
				parent = d
			}

			chain, err := c.chain(t, root)
			require.NoError(t, err)
			require.Len(t, chain, len(c.Blocks))
			for i, want := range c.Blocks {
				assert.Equal(t, want.Digest, chain[i].Digest.String(), "chain block %d", i)
				assert.Equal(t, want.eventU64(t), chain[i].WireID, "chain block %d wire id", i)
			}
		})
	}
}
