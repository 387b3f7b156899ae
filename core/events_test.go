package core

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Event
	}{
		{"stored at the root", `{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}`,
			Event{ID: 1, Kind: EventStored, Blocks: blocksOf(1400, 14)}},
		{"stored under a parent, u64 extremes", `{"event_id":18446744073709551615,"data":{"stored":{"parent_hash":18446744073709551615,"blocks":[{"block_hash":0,"tokens_hash":18446744073709551614}]}},"dp_rank":4294967295}`,
			Event{ID: math.MaxUint64, DPRank: math.MaxUint32, Kind: EventStored, ParentHash: u64(math.MaxUint64), Blocks: blocksOf(0, math.MaxUint64-1)}},
		{"dp_rank defaults to 0, parent_hash may be absent", `{"data":{"stored":{"blocks":[]}},"event_id":3}`,
			Event{ID: 3, Kind: EventStored, Blocks: []StoredBlock{}}},
		{"start_position and mm_extra_info", `{"event_id":2,"data":{"stored":{"parent_hash":5,"start_position":32,"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[{"mm_hash":9,"offsets":[[0,4],[6,8]]}]}},{"block_hash":3,"tokens_hash":4,"mm_extra_info":null}]}}}`,
			Event{ID: 2, Kind: EventStored, ParentHash: u64(5), StartPosition: u64(32), Blocks: []StoredBlock{
				{BlockHash: 1, TokensHash: 2, MMObjects: []MMObject{{MMHash: 9, Offsets: [][2]uint64{{0, 4}, {6, 8}}}}},
				{BlockHash: 3, TokensHash: 4}}}},
		{"start_position null", `{"event_id":2,"data":{"stored":{"start_position":null,"blocks":[]}}}`,
			Event{ID: 2, Kind: EventStored, Blocks: []StoredBlock{}}},
		{"removed", `{"event_id":4,"data":{"removed":{"block_hashes":[1,18446744073709551615]}},"dp_rank":2}`,
			Event{ID: 4, DPRank: 2, Kind: EventRemoved, BlockHashes: []uint64{1, math.MaxUint64}}},
		{"cleared as a string", `{"event_id":5,"data":"cleared"}`, Event{ID: 5, Kind: EventCleared}},
		{"cleared as a unit variant", `{"event_id":5,"data":{"cleared":null}}`, Event{ID: 5, Kind: EventCleared}},
		{"unknown fields everywhere, spaces", " {\"x\":[1,{\"y\":\"\\u00e9\\\"\"}],\"event_id\" : 6 ,\"data\":{\"removed\":{\"medium\":\"GPU\",\"block_hashes\":[ 7 ]}},\"extra\":-1.5e3}\n",
			Event{ID: 6, Kind: EventRemoved, BlockHashes: []uint64{7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEvent([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			// What we write, we read back identically.
			out, err := got.MarshalJSON()
			require.NoError(t, err)
			back, err := DecodeEvent(out)
			require.NoError(t, err)
			assert.Equal(t, got, back)
			assert.True(t, json.Valid(out))
		})
	}
}

func TestDecodeEventErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "decode event: unexpected end of input, want an object"},
		{`[]`, `decode event: unexpected '[' at offset 0, want an object`},
		{`{"event_id":1,"data":"cleared"} x`, `decode event: unexpected 'x' at offset 32 after the event`},
		{`{"data":"cleared"}`, "decode event: event_id: missing"},
		{`{"event_id":1}`, "decode event: data: missing"},
		{`{"event_id":-1,"data":"cleared"}`, "decode event: event_id: -1 is negative, want an unsigned 64-bit integer"},
		{`{"event_id":1.0,"data":"cleared"}`, "decode event: event_id: 1.0 is not an integer"},
		{`{"event_id":1e3,"data":"cleared"}`, "decode event: event_id: 1e3 is not an integer"},
		{`{"event_id":18446744073709551616,"data":"cleared"}`, "decode event: event_id: 18446744073709551616 exceeds 2^64-1"},
		{`{"event_id":"1","data":"cleared"}`, `decode event: event_id: unexpected '"' at offset 12, want an unsigned integer`},
		{`{"event_id":01,"data":"cleared"}`, "decode event: event_id: number has a leading zero"},
		{`{"event_id":1,"dp_rank":4294967296,"data":"cleared"}`, "decode event: dp_rank: 4294967296 exceeds 2^32-1"},
		{`{"event_id":1,"data":"wiped"}`, `decode event: data: unknown event kind "wiped" (want stored, removed or cleared)`},
		{`{"event_id":1,"data":{}}`, "decode event: data: empty object, want one of stored, removed, cleared"},
		{`{"event_id":1,"data":{"stored":{"blocks":[]},"removed":{"block_hashes":[]}}}`, "decode event: data: more than one event kind"},
		{`{"event_id":1,"data":{"stored":{"parent_hash":null}}}`, "decode event: data.stored.blocks: missing"},
		{`{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":2},{"block_hash":1,"tokens_hash":2},{"block_hash":-3,"tokens_hash":2}]}}}`,
			"decode event: data.stored.blocks[2].block_hash: -3 is negative, want an unsigned 64-bit integer"},
		{`{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1}]}}}`, "decode event: data.stored.blocks[0].tokens_hash: missing"},
		{`{"event_id":1,"data":{"stored":{"parent_hash":1.5,"blocks":[]}}}`, "decode event: data.stored.parent_hash: 1.5 is not an integer"},
		{`{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[{"mm_hash":1,"offsets":[[1]]}]}}]}}}`,
			"decode event: data.stored.blocks[0].mm_extra_info.mm_objects[0].offsets[0]: has 1 elements, want 2"},
		{`{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{}}]}}}`,
			"decode event: data.stored.blocks[0].mm_extra_info.mm_objects: missing"},
		{`{"event_id":1,"data":{"removed":{"block_hashes":[1,2,null]}}}`, "decode event: data.removed.block_hashes[2]: unexpected 'n' at offset 53, want an unsigned integer"},
		{`{"event_id":1,"data":{"removed":{"block_hashes":[1,]}}}`, "decode event: data.removed.block_hashes: unexpected ']' at offset 51, want a value"},
		{`{"event_id":1,"data":{"cleared":{}}}`, `decode event: data.cleared: unexpected '{' at offset 32, want null`},
		{`{"event_id":1,"data":"cleared","x":tru}`, `decode event: unexpected 't' at offset 35, want true`},
		{"{\"event_id\":1,\"data\":\"cleared\",\"x\":\"\xff\"}", "decode event: string is not valid UTF-8"},
		{`{"event_id":1,"data":"cleared",}`, `decode event: unexpected '}' at offset 31, want a member name`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := DecodeEvent([]byte(tc.in))
			require.ErrorIs(t, err, ErrDecode)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestDecodeRejectsDeepNesting(t *testing.T) {
	deep := `{"event_id":1,"data":"cleared","x":` + repeat("[", 10000) + repeat("]", 10000) + `}`
	_, err := DecodeEvent([]byte(deep))
	require.ErrorIs(t, err, ErrDecode)
	assert.Contains(t, err.Error(), "nesting deeper than")
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestMarshalEventIsDynamosForm(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{ID: 1, Kind: EventStored, Blocks: blocksOf(1400, 14)},
			`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}`},
		{Event{ID: 2, DPRank: 3, Kind: EventStored, ParentHash: u64(math.MaxUint64), StartPosition: u64(16), Blocks: []StoredBlock{
			{BlockHash: 1, TokensHash: 2, MMObjects: []MMObject{{MMHash: 7, Offsets: [][2]uint64{{0, 3}}}}}, {BlockHash: 3, TokensHash: 4, MMObjects: []MMObject{}}}},
			`{"event_id":2,"data":{"stored":{"parent_hash":18446744073709551615,"start_position":16,"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[{"mm_hash":7,"offsets":[[0,3]]}]}},{"block_hash":3,"tokens_hash":4,"mm_extra_info":{"mm_objects":[]}}]}},"dp_rank":3}`},
		{Event{ID: 3, Kind: EventStored}, `{"event_id":3,"data":{"stored":{"parent_hash":null,"blocks":[]}},"dp_rank":0}`},
		{Event{ID: 4, Kind: EventRemoved, BlockHashes: []uint64{5, 6}}, `{"event_id":4,"data":{"removed":{"block_hashes":[5,6]}},"dp_rank":0}`},
		{Event{ID: 5, DPRank: 1, Kind: EventCleared}, `{"event_id":5,"data":"cleared","dp_rank":1}`},
	} {
		got, err := json.Marshal(tc.ev)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(got))
	}
	_, err := Event{ID: 1}.MarshalJSON()
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestRouterEventJSON(t *testing.T) {
	re := RouterEvent{WorkerID: 7, Event: Event{ID: 1, Kind: EventCleared}}
	got, err := re.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"worker_id":7,"storage_tier":"device","event":{"event_id":1,"data":"cleared","dp_rank":0}}`, string(got))

	back, err := DecodeRouterEvent(got)
	require.NoError(t, err)
	re.StorageTier = TierDevice
	assert.Equal(t, re, back)

	for in, tier := range map[string]StorageTier{
		`{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`:                              TierDevice,
		`{"worker_id":1,"storage_tier":null,"event":{"event_id":1,"data":"cleared"}}`:          TierDevice,
		`{"event":{"event_id":1,"data":"cleared"},"storage_tier":"host_pinned","worker_id":1}`: TierHostPinned,
		`{"worker_id":1,"storage_tier":"disk","event":{"event_id":1,"data":"cleared"},"x":0}`:  TierDisk,
		`{"worker_id":1,"storage_tier":"external","event":{"event_id":1,"data":"cleared"}}`:    TierExternal,
	} {
		got, err := DecodeRouterEvent([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, tier, got.StorageTier, in)
	}
	for in, want := range map[string]string{
		`{"worker_id":1,"storage_tier":"gpu","event":{"event_id":1,"data":"cleared"}}`: `decode event: storage_tier: unknown storage tier "gpu" (want device, host_pinned, disk or external)`,
		`{"event":{"event_id":1,"data":"cleared"}}`:                                    "decode event: worker_id: missing",
		`{"worker_id":1}`: "decode event: event: missing",
		`{"worker_id":1,"event":{"event_id":1,"data":{"removed":{"block_hashes":[-1]}}}}`: "decode event: event.data.removed.block_hashes[0]: -1 is negative, want an unsigned 64-bit integer",
	} {
		_, err := DecodeRouterEvent([]byte(in))
		require.ErrorIs(t, err, ErrDecode)
		assert.EqualError(t, err, want)
	}
	_, err = RouterEvent{StorageTier: "gpu", Event: Event{Kind: EventCleared}}.MarshalJSON()
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestStatsJSON(t *testing.T) {
	x := NewIndex(IndexOptions{Mode: ModeEnforce})
	require.NoError(t, x.ApplyStored(Worker{ID: 7}, 1, nil, blocksOf(1, 10, 2, 11)))
	require.Error(t, x.ApplyRemoved(Worker{ID: math.MaxUint64, DPRank: 1}, 2, []uint64{9}))
	got, err := json.Marshal(x.Stats())
	require.NoError(t, err)
	zero := `{"parent_not_found":0,"block_not_found":0,"hash_mismatch":0,"self_reference":0,"duplicate_store":0,"name_reused":0}`
	one := `{"parent_not_found":0,"block_not_found":1,"hash_mismatch":0,"self_reference":0,"duplicate_store":0,"name_reused":0}`
	assert.Equal(t, `{"mode":"enforce","nodes":2,"violations":`+one+`,"workers":[`+
		`{"worker_id":7,"dp_rank":0,"blocks":2,"unstable":false,"violations":`+zero+`},`+
		`{"worker_id":18446744073709551615,"dp_rank":1,"blocks":0,"unstable":true,"violations":`+one+`}]}`, string(got))

	got, err = json.Marshal(NewIndex(IndexOptions{Mode: ModeWarn}).Stats())
	require.NoError(t, err)
	assert.Equal(t, `{"mode":"warn","nodes":0,"violations":`+zero+`,"workers":[]}`, string(got))
}

// ApplyJSON decodes as DecodeEvent does and applies as Apply does,
// without allocating once its memory is warm.
func TestApplyJSONAgreesWithDecodeAndApply(t *testing.T) {
	events := []string{
		`{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":10,"tokens_hash":1},{"block_hash":11,"tokens_hash":2}]}}}`,
		`{"event_id":2,"data":{"stored":{"parent_hash":11,"start_position":32,"blocks":[{"block_hash":12,"tokens_hash":3}]}},"dp_rank":1}`,
		`{"event_id":3,"data":{"stored":{"parent_hash":11,"blocks":[{"block_hash":13,"tokens_hash":4,"mm_extra_info":{"mm_objects":[{"mm_hash":7,"offsets":[[0,3]]}]}}]}}}`,
		`{"event_id":4,"data":{"removed":{"block_hashes":[13,99]}}}`,
		`{"event_id":5,"data":{"stored":{"parent_hash":777,"blocks":[{"block_hash":14,"tokens_hash":5}]}}}`,
		`{"event_id":6,"data":"cleared","dp_rank":1}`,
		`{"event_id":7,"data":{"stored":{"parent_hash":null,"blocks":[]}}}`,
	}
	a, b := NewIndex(IndexOptions{Mode: ModeWarn}), NewIndex(IndexOptions{Mode: ModeWarn})
	for _, e := range events {
		ev, err := DecodeEvent([]byte(e))
		require.NoError(t, err, e)
		want := a.Apply(5, ev)
		got := b.ApplyJSON(5, []byte(e))
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), e)
		for _, q := range [][]uint64{{1}, {1, 2}, {1, 2, 3}, {1, 2, 4}, {5}} {
			require.Equal(t, a.AppendMatches(nil, q, false), b.AppendMatches(nil, q, false))
		}
	}
	require.Equal(t, a.Stats(), b.Stats())
	for _, bad := range []string{`{"event_id":1}`, `{"event_id":1,"data":{"stored":{"blocks":[{"block_hash":-1,"tokens_hash":1}]}}}`, `not json`} {
		_, want := DecodeEvent([]byte(bad))
		require.Error(t, want)
		require.Equal(t, want.Error(), b.ApplyJSON(5, []byte(bad)).Error())
	}
	require.Equal(t, a.Stats(), b.Stats(), "a malformed event changes nothing")

	store := []byte(`{"event_id":8,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":20,"tokens_hash":9},{"block_hash":21,"tokens_hash":8}]}}}`)
	remove := []byte(`{"event_id":9,"data":{"removed":{"block_hashes":[21,20]}}}`)
	allocs := testing.AllocsPerRun(200, func() {
		if err := b.ApplyJSON(6, store); err != nil {
			t.Fatal(err)
		}
		if err := b.ApplyJSON(6, remove); err != nil {
			t.Fatal(err)
		}
	})
	if !raceEnabled { // the race detector makes sync.Pool drop items
		assert.Zero(t, allocs)
	}
}
