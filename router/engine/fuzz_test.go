package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzEngine drives an engine with requests (and aborts) decoded from the
// input, stepping between them, and checks that its invariants hold after
// every step, that its events replay into its cache, and that every
// request not aborted finishes.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 3, 5, 40, 2, 1, 9, 7, 200, 100, 3, 0, 4, 4, 4, 4})
	f.Add([]byte{1, 255, 255, 255, 255, 2, 2, 2, 2, 250, 128, 7, 7, 7, 7, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		cfg := smallConfig(8+int(data[0]%64), 4)
		cfg.MaxNumSeqs = 1 + int(data[1]%8)
		cfg.MaxNumBatchedTokens = 16 + int(data[0]>>2)
		cfg.EnableChunkedPrefill = data[1]&0x80 == 0
		e := newEngine(t, cfg)
		data = data[2:]
		want := map[string]bool{}
		for i := 0; len(data) >= 4 && i < 64; i++ {
			op, a, b, c := data[0], int(data[1]), int(data[2]), data[3]
			data = data[4:]
			if op%8 == 7 { // abort the request a steps back
				if id := fmt.Sprintf("r%d", i-1-a%4); e.Abort(id) {
					delete(want, id)
				}
				step(t, e)
				continue
			}
			prompt := 1 + a%60
			output := 1 + b%30
			if err := e.Add(Request{
				ID:           fmt.Sprintf("r%d", i),
				BlockHashes:  fork(chain(uint64(c%3+1), prompt/4), min(prompt/4, int(c>>4)), uint64(i+10), prompt/4),
				PromptTokens: prompt,
				OutputTokens: output,
			}); err != nil {
				require.ErrorIs(t, err, ErrTooLarge)
				continue
			}
			want[fmt.Sprintf("r%d", i)] = true
			for range op % 4 {
				step(t, e)
			}
		}
		steps := run(t, e, 100000)
		for _, s := range steps {
			for _, f := range s.Finished {
				delete(want, f.ID)
			}
			require.GreaterOrEqual(t, s.Duration, time.Duration(0))
		}
		// Requests that finished during the stepping above are gone too.
		for id := range want {
			require.False(t, e.Has(id))
		}
		st := e.Stats()
		require.Equal(t, st.NumBlocks, st.UsedBlocks+st.FreeBlocks)
		require.Zero(t, st.UsedBlocks)
	})
}
