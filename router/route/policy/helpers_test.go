package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
	"github.com/kvhash/kvhash/router/ingest"
)

const (
	testBS    = 4
	testModel = "m"
)

// fleet is a production indexer with workers 1..n registered, fed KV
// events as engines send them.
type fleet struct {
	t   *testing.T
	ix  *indexer.Indexer
	seq map[uint64]uint64
}

func newFleet(t *testing.T, workers ...uint64) *fleet {
	t.Helper()
	ix, err := indexer.New(indexer.Options{BlockSize: testBS, Mode: core.ModeEnforce})
	require.NoError(t, err)
	f := &fleet{t: t, ix: ix, seq: map[uint64]uint64{}}
	for _, w := range workers {
		f.add(w)
	}
	return f
}

func (f *fleet) add(w uint64) {
	_, err := f.ix.AddWorker(indexer.WorkerSpec{WorkerID: w, Model: testModel, EngineHash: "off"})
	require.NoError(f.t, err)
}

// store has worker w report the full blocks of tokens as one BlockStored
// at the root (engine ids: the tokens' sequence hashes).
func (f *fleet) store(w uint64, tokens []uint32) {
	local, err := f.ix.HashPrompt(tokens, indexer.PromptOptions{})
	require.NoError(f.t, err)
	n := len(local) * testBS
	b := &ingest.Batch{Seq: f.seq[w], Events: []ingest.Event{{
		Kind: ingest.BlockStored, BlockHashes: core.SequenceHashes(local), TokenIDs: tokens[:n], BlockSize: testBS,
	}}}
	f.seq[w]++
	f.ix.HandleBatch(ingest.Source{Model: testModel, WorkerID: w}, b)
}

func (f *fleet) env(seed uint64) Env {
	return Env{Seed: seed, Indexer: f.ix, Model: testModel, EngineBlocks: 1000, Now: func() time.Time { return time.Unix(1e9, 0) }}
}

// query builds a Query the way the simulator does.
func (f *fleet) query(id string, tokens []uint32) *Query {
	local, err := f.ix.HashPrompt(tokens, indexer.PromptOptions{})
	require.NoError(f.t, err)
	return &Query{RequestID: id, Tokens: tokens, Blocks: core.SequenceHashes(local)}
}

// tokens returns n token ids starting at from.
func tokens(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func rowsOf(ws ...uint64) []Row {
	out := make([]Row, len(ws))
	for i, w := range ws {
		out[i] = Row{Worker: core.Worker{ID: w}}
	}
	return out
}

// fillOverlaps sets each row's Overlap from the production index.
func fillOverlaps(t *testing.T, f *fleet, prompt []uint32, rows []Row) {
	local, err := f.ix.HashPrompt(prompt, indexer.PromptOptions{})
	require.NoError(t, err)
	ovs, err := f.ix.Overlaps(indexer.ModelKey{Model: testModel}, local, false)
	require.NoError(t, err)
	for _, o := range ovs {
		i, err := rowOf(rows, o.Worker)
		require.NoError(t, err)
		rows[i].Overlap = o.Blocks
	}
}
