package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WorkerBlocks and WorkerViolations agree with Stats' per-rank counts through stores, a
// reused name (the old block kept unnamed), removals and a clear.
func TestWorkerBlocksAgreesWithStats(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeWarn})
	statsBlocks := func(w Worker) uint64 {
		for _, ws := range x.Stats().Workers {
			if ws.Worker == w {
				return ws.Blocks
			}
		}
		return 0
	}
	statsViolations := func(w Worker) [NumViolations]uint64 {
		for _, ws := range x.Stats().Workers {
			if ws.Worker == w {
				return ws.Violations
			}
		}
		return [NumViolations]uint64{}
	}
	steps := []struct {
		name  string
		apply func()
		want  map[Worker]uint64
	}{
		{"unknown ranks", func() {}, map[Worker]uint64{w1: 0, w1b: 0}},
		{"a store", func() { require.NoError(t, x.ApplyStored(w1, 1, nil, blocksOf(100, 10, 110, 11, 120, 12))) }, map[Worker]uint64{w1: 3, w1b: 0}},
		{"another rank shares a block", func() { require.NoError(t, x.ApplyStored(w1b, 1, nil, blocksOf(100, 10))) }, map[Worker]uint64{w1: 3, w1b: 1}},
		{"a reused name keeps the old block", func() { _ = x.ApplyStored(w1, 2, nil, blocksOf(100, 99)) }, map[Worker]uint64{w1: 4, w1b: 1}},
		{"a removal", func() { require.NoError(t, x.ApplyRemoved(w1, 3, []uint64{120})) }, map[Worker]uint64{w1: 3, w1b: 1}},
		{"a clear", func() { x.ClearWorker(w1) }, map[Worker]uint64{w1: 0, w1b: 1}},
	}
	for _, st := range steps {
		st.apply()
		for w, n := range st.want {
			assert.Equal(t, n, x.WorkerBlocks(w), "%s: %v", st.name, w)
			assert.Equal(t, statsBlocks(w), x.WorkerBlocks(w), "%s: %v against Stats", st.name, w)
			assert.Equal(t, statsViolations(w), x.WorkerViolations(w), "%s: %v's violations against Stats", st.name, w)
		}
	}
	var reused uint64
	for _, n := range x.WorkerViolations(w1) {
		reused += n
	}
	assert.Positive(t, reused, "the reused name counted a violation")
}
