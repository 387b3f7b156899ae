package ingest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// mp encodes values with msgpack's generic encoder (maps with sorted
// keys), to build payloads that no engine sends but a decoder must judge.
func mp(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	require.NoError(t, enc.Encode(v))
	return buf.Bytes()
}

func TestDecodeAcceptsWhatEnginesSend(t *testing.T) {
	stored := map[string]any{"type": "BlockStored", "block_hashes": []any{uint64(1<<64 - 1), int64(-1)},
		"parent_block_hash": []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, "token_ids": []any{0, 127, 128, 65536, uint64(1<<32 - 1)},
		"block_size": 16, "medium": "GPU", "cache_salt": "s", "session_id": 42}
	cases := []struct {
		name  string
		batch any
		check func(t *testing.T, b *Batch)
	}{
		{"map event in a 3-element batch", []any{1.5, []any{stored}, 3}, func(t *testing.T, b *Batch) {
			require.NotNil(t, b.DPRank)
			assert.Equal(t, uint32(3), *b.DPRank)
			ev := b.Events[0]
			assert.Equal(t, []uint64{1<<64 - 1, 1<<64 - 1}, ev.BlockHashes)
			assert.Equal(t, uint64(0x0203040506070809), *ev.ParentHash, "the last 8 of 9 bytes")
			assert.Equal(t, []uint32{0, 127, 128, 65536, 1<<32 - 1}, ev.TokenIDs)
			assert.Equal(t, "s", ev.CacheSalt)
			assert.Equal(t, "42", ev.SessionID, "a numeric session id as text")
		}},
		{"nil rank", []any{1.0, []any{}, nil}, func(t *testing.T, b *Batch) { assert.Nil(t, b.DPRank) }},
		{"extra batch tail", []any{1.0, []any{}, 0, "more", []any{1}}, func(t *testing.T, b *Batch) { assert.Empty(t, b.Events) }},
		{"int timestamp", []any{7, []any{}}, func(t *testing.T, b *Batch) { assert.InDelta(t, 7.0, b.Timestamp, 0) }},
		{"map batch, unknown key", map[string]any{"ts": 2.0, "events": []any{[]any{"AllBlocksCleared"}}, "x": map[string]any{"y": 1}},
			func(t *testing.T, b *Batch) { assert.Equal(t, AllBlocksCleared, b.Events[0].Kind) }},
		{"array event, trailing defaults omitted", []any{1.0, []any{[]any{"BlockRemoved", []any{5}}}}, func(t *testing.T, b *Batch) {
			assert.Equal(t, []uint64{5}, b.Events[0].BlockHashes)
			assert.Empty(t, b.Events[0].Medium)
		}},
		{"short bytes hash", []any{1.0, []any{[]any{"BlockRemoved", []any{[]byte{0x01, 0x00}}}}}, func(t *testing.T, b *Batch) {
			assert.Equal(t, []uint64{0x100}, b.Events[0].BlockHashes)
		}},
	}
	dec := NewDecoder()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _, err := dec.DecodeBatch("kv", 9, mp(t, c.batch))
			require.NoError(t, err)
			assert.Equal(t, uint64(9), b.Seq)
			c.check(t, b)
		})
	}
}

// ordered encodes a map with its keys in the order given (msgspec writes
// the "type" tag first).
func ordered(t testing.TB, kvs ...any) msgpack.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	require.NoError(t, enc.EncodeMapLen(len(kvs)/2))
	for _, kv := range kvs {
		require.NoError(t, enc.Encode(kv))
	}
	return buf.Bytes()
}

func TestDecodeRejectsWithReasonAndPlace(t *testing.T) {
	good := ordered(t, "type", "BlockStored", "block_hashes", []any{1}, "token_ids", []any{1}, "block_size", 16)
	with := func(k string, v any) msgpack.RawMessage {
		fields := []any{"type", "BlockStored", "block_hashes", []any{1}, "token_ids", []any{1}, "block_size", 16}
		found := false
		for i := 0; i < len(fields); i += 2 {
			if fields[i] == k {
				fields[i+1], found = v, true
			}
		}
		if !found {
			fields = append(fields, k, v)
		}
		return ordered(t, fields...)
	}
	cases := []struct {
		name   string
		raw    []byte
		batch  any
		reason MalformedReason
		where  string
	}{
		{name: "not a batch", batch: "x", reason: ReasonWrongType, where: "batch"},
		{name: "1-element batch", batch: []any{1.0}, reason: ReasonWrongType, where: "batch"},
		{name: "map batch without events", batch: map[string]any{"ts": 1.0}, reason: ReasonWrongType, where: "batch"},
		{name: "events not a list", batch: []any{1.0, 5}, reason: ReasonWrongType, where: "batch.events"},
		{name: "token id above u32", batch: []any{1.0, []any{good, with("token_ids", []any{1, 2, 3, 4, 5, uint64(1 << 32)})}},
			reason: ReasonTokenRange, where: "event 1: BlockStored.token_ids[5]"},
		{name: "negative token id", batch: []any{1.0, []any{with("token_ids", []any{-1})}},
			reason: ReasonTokenRange, where: "event 0: BlockStored.token_ids[0]"},
		{name: "float token id", batch: []any{1.0, []any{with("token_ids", []any{1.5})}},
			reason: ReasonWrongType, where: "event 0: BlockStored.token_ids[0]"},
		{name: "nil hash in list", batch: []any{1.0, []any{with("block_hashes", []any{1, nil})}},
			reason: ReasonWrongType, where: "event 0: BlockStored.block_hashes[1]"},
		{name: "string hash", batch: []any{1.0, []any{with("parent_block_hash", "abc")}},
			reason: ReasonWrongType, where: "event 0: BlockStored.parent_block_hash"},
		{name: "block size a string", batch: []any{1.0, []any{with("block_size", "16")}},
			reason: ReasonWrongType, where: "event 0: BlockStored.block_size"},
		{name: "map event without type", batch: []any{1.0, []any{map[string]any{"block_hashes": []any{1}}}},
			reason: ReasonWrongType, where: "event 0: "},
		{name: "stored without hashes", batch: []any{1.0, []any{[]any{"BlockStored"}}},
			reason: ReasonWrongType, where: "event 0: "},
		{name: "positional field of the wrong type", batch: []any{1.0, []any{[]any{"BlockStored", []any{1}, nil, "tokens"}}},
			reason: ReasonWrongType, where: "event 0: BlockStored.token_ids"},
		{name: "truncated", raw: []byte{0x92, 0xcb, 0x00}, reason: ReasonMsgpack, where: "batch.ts"},
		{name: "trailing bytes", raw: append(mp(t, []any{1.0, []any{}}), 0x00), reason: ReasonMsgpack},
		{name: "forged length", raw: []byte{0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff}, reason: ReasonMsgpack, where: "batch.events"},
		{name: "empty payload", raw: []byte{}, reason: ReasonMsgpack, where: "batch"},
	}
	dec := NewDecoder()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.raw
			if raw == nil {
				raw = mp(t, c.batch)
			}
			b, _, err := dec.DecodeBatch("", 0, raw)
			require.Error(t, err)
			assert.Nil(t, b)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, c.reason, de.Reason, "%v", err)
			assert.Contains(t, de.Where, c.where, "%v", err)
			assert.Equal(t, c.reason, ReasonOf(err))
		})
	}
}

func TestDecodeDeeplyNestedValuesAreBounded(t *testing.T) {
	// An unknown key whose value nests 10,000 arrays: rejected, no stack
	// exhaustion.
	nested := bytes.Repeat([]byte{0x91}, 10_000)
	nested = append(nested, 0x00)
	raw := []byte{0x82, 0xa2, 't', 's', 0x00, 0xa1, 'x'}
	raw = append(raw, nested...)
	_, _, err := NewDecoder().DecodeBatch("", 0, raw)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nested deeper")
}

func TestRankEndpointAndTopics(t *testing.T) {
	cases := []struct {
		ep   string
		rank uint32
		want string
		err  bool
	}{
		{"tcp://10.0.0.1:5557", 0, "tcp://10.0.0.1:5557", false},
		{"tcp://10.0.0.1:5557", 3, "tcp://10.0.0.1:5560", false},
		{"tcp://[::1]:5557", 1, "tcp://[::1]:5558", false},
		{"ipc:///tmp/kv", 2, "ipc:///tmp/kv_dp2", false},
		{"tcp://host", 1, "", true},
		{"tcp://h:65535", 1, "", true},
		{"udp://h:1", 1, "", true},
		{"", 4, "", false},
	}
	for _, c := range cases {
		got, err := RankEndpoint(c.ep, c.rank)
		if c.err {
			assert.Error(t, err, c.ep)
			continue
		}
		require.NoError(t, err, c.ep)
		assert.Equal(t, c.want, got)
	}
	pod, model, ok := ParseLLMDTopic("kv@10.0.0.1:8000@meta-llama/Llama-3.1-8B")
	assert.True(t, ok)
	assert.Equal(t, "10.0.0.1:8000", pod)
	assert.Equal(t, "meta-llama/Llama-3.1-8B", model)
	for _, bad := range []string{"", "kv", "kv@", "kv@pod", "kv@@m", "x@pod@m"} {
		_, _, ok := ParseLLMDTopic(bad)
		assert.False(t, ok, bad)
	}
}

func TestParseFrames(t *testing.T) {
	m, err := parseLive([][]byte{[]byte("kv"), seqBytes(258), {0x90}})
	require.NoError(t, err)
	assert.Equal(t, liveMessage{topic: "kv", seq: 258, payload: []byte{0x90}}, m)

	r, err := parseReplayReply([][]byte{{}, []byte("kv"), seqBytes(5), {0x90}})
	require.NoError(t, err)
	assert.Equal(t, replayReply{topic: "kv", seq: 5, payload: []byte{0x90}}, r)
	r, err = parseReplayReply([][]byte{{}, seqBytes(6), {0x90}})
	require.NoError(t, err)
	assert.Equal(t, uint64(6), r.seq)
	for _, end := range [][][]byte{{{}, {}, endMarker, {}}, {{}, endMarker, {}}} {
		r, err = parseReplayReply(end)
		require.NoError(t, err)
		assert.True(t, r.end)
	}
	for _, bad := range [][][]byte{{{}, seqBytes(1)}, {{1}, seqBytes(1), {}}, {{}, {1, 2}, {}}, {{}, {}, {}, {}, {}}} {
		_, err := parseReplayReply(bad)
		assert.Error(t, err)
	}
}
