package indexerbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest"
)

// Every payload decodes with kvrouter's vLLM decoder into a stream an
// index can apply whole: each store's parent is a block its engine holds,
// each removed block one it holds, and the totals are the shape.
func TestGeneratedStreamIsAnApplicableVLLMStream(t *testing.T) {
	cases := []struct {
		name    string
		engines int
		blocks  int
	}{
		{"one engine", 1, 30_000},
		{"4 engines", 4, 50_000},
		{"32 engines", 32, 120_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec(tc.engines, tc.blocks)
			st, err := Generate(spec)
			require.NoError(t, err)
			require.Len(t, st.Messages, tc.engines)

			dec := ingest.NewDecoder()
			stored, removed, shared := 0, 0, 0
			for e, msgs := range st.Messages {
				held := map[uint64]bool{}
				for seq, m := range msgs {
					b, unknown, err := dec.DecodeBatch("", uint64(seq), m.Payload)
					require.NoError(t, err, "engine %d seq %d", e, seq)
					require.Zero(t, unknown)
					require.NotNil(t, b.DPRank)
					assert.Equal(t, uint32(0), *b.DPRank)
					inMsg := 0
					for _, ev := range b.Events {
						switch ev.Kind {
						case ingest.BlockStored:
							if ev.ParentHash != nil {
								require.True(t, held[*ev.ParentHash], "engine %d seq %d: parent %d not held", e, seq, *ev.ParentHash)
							}
							require.Equal(t, spec.BlockSize, ev.BlockSize)
							require.Len(t, ev.TokenIDs, len(ev.BlockHashes)*spec.BlockSize)
							for _, h := range ev.BlockHashes {
								require.False(t, held[h], "engine %d stores %d twice", e, h)
								held[h] = true
							}
							inMsg += len(ev.BlockHashes)
							stored += len(ev.BlockHashes)
						case ingest.BlockRemoved:
							for _, h := range ev.BlockHashes {
								require.True(t, held[h], "engine %d removes %d, not held", e, h)
								delete(held, h)
							}
							removed += len(ev.BlockHashes)
						default:
							t.Fatalf("unexpected event %v", ev.Kind)
						}
					}
					assert.Equal(t, m.Stored, inMsg, "engine %d seq %d: stored count", e, seq)
				}
				sentinel := st.Messages[e][len(msgs)-1]
				assert.Equal(t, sentinelBlocks, sentinel.Stored, "engine %d ends with the sentinel", e)
			}
			assert.Equal(t, st.Stored, stored)
			assert.Equal(t, st.Removed, removed)
			assert.GreaterOrEqual(t, stored, tc.blocks)
			assert.InDelta(t, spec.RemovedFrac, float64(removed)/float64(stored), 0.01)
			for _, p := range st.Prompts {
				n := st.PromptBlocks(p)
				assert.True(t, n >= spec.MinBlocks && n <= spec.MaxBlocks, "prompt of %d blocks", n)
				if p.Prefix >= 0 {
					shared++
				}
			}
			assert.InDelta(t, spec.SharedFrac, float64(shared)/float64(len(st.Prompts)), 0.1)
		})
	}
}

func TestSpecRejectsImpossibleShapes(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Spec)
	}{
		{"no engines", func(s *Spec) { s.Engines = 0 }},
		{"prefix longer than any prompt allows", func(s *Spec) { s.PrefixMax = s.MaxBlocks }},
		{"everything removed", func(s *Spec) { s.RemovedFrac = 1 }},
		{"fewer blocks than one prompt", func(s *Spec) { s.StoredBlocks = s.MaxBlocks - 1 }},
		{"no batches", func(s *Spec) { s.PromptsPerBatch = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec(4, 10_000)
			tc.mutate(&spec)
			_, err := Generate(spec)
			require.Error(t, err)
		})
	}
}

// Expected is the longest held prefix per engine: the prompt's engine
// holds its prefix and kept blocks, others holding the prefix only that.
func TestExpectedFollowsWhatEachEngineHolds(t *testing.T) {
	st, err := Generate(DefaultSpec(4, 20_000))
	require.NoError(t, err)
	for _, p := range st.Prompts {
		want := st.Expected(p)
		pre := 0
		if p.Prefix >= 0 {
			pre = st.prefixes[p.Prefix].n
		}
		if pre+p.Kept > 0 {
			assert.Equal(t, pre+p.Kept, want[p.Engine])
		}
		for e, n := range want {
			if e != p.Engine {
				assert.Equal(t, pre, n)
				assert.True(t, st.hasPrefix[e][p.Prefix])
			}
		}
	}
}

func TestCountsAndRateNames(t *testing.T) {
	assert.Equal(t, "burst", RateName(0))
	assert.Equal(t, "500k/s", RateName(500_000))
	assert.Equal(t, "1.2M/s", RateName(1_200_000))
	assert.Equal(t, "2M/s", RateName(2_000_000))
}

func TestMillionsNeverPrintsAThousandK(t *testing.T) {
	assert.Equal(t, "1M", millions(999_600))
	assert.Equal(t, "999k", millions(999_400))
	assert.Equal(t, "8M", millions(8_000_399))
}
