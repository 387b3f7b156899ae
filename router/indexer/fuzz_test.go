package indexer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/ingest"
)

// eventsFromBytes turns fuzz input into engine events over a small hash
// and token domain, so stores chain, collide, repeat and get removed.
func eventsFromBytes(data []byte) []ingest.Event {
	var out []ingest.Event
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		c := data[0]
		data = data[1:]
		return c
	}
	for len(data) > 0 {
		op := next()
		n := int(next() % 4)
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = uint64(next() % 16)
		}
		switch op % 8 {
		case 0, 1, 2, 3:
			e := stored(nil, nil, hashes...)
			if p := next(); p%3 != 0 {
				e.ParentHash = u64p(uint64(p % 16))
			}
			e.BlockSize = []int{testBS, testBS, testBS, 0, 2}[next()%5]
			e.TokenIDs = tokens(uint32(next()%4)*testBS, n*e.BlockSize+int(next()%2))
			switch next() % 8 {
			case 0:
				e.CacheSalt = "s"
			case 1:
				e.ExtraKeys = [][]any{{"s"}}
			case 2:
				e.ExtraKeys = [][]any{nil, {[]any{"img", int64(0)}}}
			case 3:
				e.Medium = "CPU"
			case 4:
				e.LoraName = "l"
			case 5:
				e.ExtraKeys = [][]any{{[]byte{1}}}
			}
			out = append(out, e)
		case 4, 5, 6:
			out = append(out, removed(hashes...))
		case 7:
			out = append(out, ingest.Event{Kind: ingest.AllBlocksCleared})
		}
	}
	return out
}

// FuzzHandleBatch feeds arbitrary event streams to two ranks in enforce
// mode (so quarantines happen too): the indexer must not panic, and its
// exported state must restore into an indexer that answers the same.
func FuzzHandleBatch(f *testing.F) {
	f.Add([]byte{0, 2, 1, 2, 0, 0, 0, 0, 0, 1, 3, 2, 0, 0, 0})
	f.Add([]byte{0, 1, 1, 0, 0, 0, 1, 4, 1, 1, 0, 7})
	f.Add([]byte{1, 3, 1, 2, 3, 1, 0, 2, 0, 2, 5, 2, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 600 { // longer streams find nothing new, only slow the fuzzer
			data = data[:600]
		}
		fx := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
		fx.addWorker(1, "m", 2)
		events := eventsFromBytes(data)
		for i, e := range events {
			fx.send(src(1, "m", uint32(i%2)), e)
		}
		saved := fx.ix.Export()
		g := newFixture(t, func(o *Options) { o.Mode = core.ModeEnforce })
		require.NoError(t, g.ix.Restore(saved))
		for first := range uint32(4) {
			for _, po := range []PromptOptions{{}, {CacheSalt: "s"}, {LoraName: "l"}} {
				local, err := fx.ix.HashPrompt(tokens(first*testBS, 16), po)
				require.NoError(t, err)
				want, err := fx.ix.Overlaps(ModelKey{Model: "m"}, local, true)
				require.NoError(t, err)
				got, err := g.ix.Overlaps(ModelKey{Model: "m"}, local, true)
				require.NoError(t, err)
				require.Equal(t, want, got)
			}
		}
	})
}
