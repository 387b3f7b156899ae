package eventplane

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
	"github.com/kvhash/kvhash/router/internal/msgpackcheck"
)

func ptr[T any](v T) *T { return &v }

var testSource = ingest.Source{Model: "org/m.v1", WorkerID: 42, DPRank: 3, Endpoint: "tcp://10.0.0.5:5560", Topic: "kv@pod"}

func TestBatchRoundTrips(t *testing.T) {
	cases := []struct {
		name  string
		batch ingest.Batch
	}{
		{"empty", ingest.Batch{Seq: 0}},
		{"stored with every field", ingest.Batch{Topic: "t", Seq: 9, Timestamp: 1764570000.25, DPRank: ptr(uint32(1)), Events: []ingest.Event{{
			Kind: ingest.BlockStored, BlockHashes: []uint64{1, ^uint64(0)}, Medium: "GPU", GroupIdx: ptr(int64(-1)),
			Locality: "LOCAL", Ownership: "o", ParentHash: ptr(uint64(7)), TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8},
			BlockSize: 4, LoraID: ptr(int64(3)), LoraName: "lora", ExtraKeys: [][]any{{"salt"}, nil},
			SpecKind: "full", SlidingWindow: ptr(int64(128)), CacheSalt: "s", SessionID: "sess",
			LookaheadTokenIDs: [][]uint32{{9}, {10}},
		}}}},
		{"removed and cleared", ingest.Batch{Seq: 1 << 40, Events: []ingest.Event{
			{Kind: ingest.BlockRemoved, BlockHashes: []uint64{5}, Medium: "CPU"},
			{Kind: ingest.AllBlocksCleared},
		}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := EncodeBatch(testSource, &c.batch)
			require.NoError(t, err)
			m, err := Decode(data)
			require.NoError(t, err)
			require.Nil(t, m.Stream)
			assert.Equal(t, testSource, m.Source)
			want := c.batch
			if want.Events == nil {
				want.Events = []ingest.Event{}
			}
			assert.Equal(t, want, *m.Batch)
		})
	}
}

func TestStreamEventsRoundTrip(t *testing.T) {
	for _, ev := range []ingest.StreamEvent{
		{Kind: ingest.StreamGapLost, From: 3, To: 9, Err: errors.New("replay buffer too short")},
		{Kind: ingest.StreamRestarted},
		{Kind: ingest.StreamConnected},
		{Kind: ingest.StreamMalformed, Err: errors.New("bad tag")},
	} {
		data, err := EncodeStream(testSource, ev)
		require.NoError(t, err)
		m, err := Decode(data)
		require.NoError(t, err)
		require.Nil(t, m.Batch)
		assert.Equal(t, ev.Kind, m.Stream.Kind)
		assert.Equal(t, ev.From, m.Stream.From)
		assert.Equal(t, ev.To, m.Stream.To)
		if ev.Err == nil {
			assert.NoError(t, m.Stream.Err)
		} else {
			assert.EqualError(t, m.Stream.Err, ev.Err.Error())
		}
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	good, err := EncodeBatch(testSource, &ingest.Batch{Seq: 1})
	require.NoError(t, err)
	future := append([]byte{WireVersion + 1}, good[1:]...)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"future version", future, ErrVersion},
		{"truncated", good[:len(good)/2], ErrMalformed},
		{"not msgpack", []byte{WireVersion, 0xc1}, ErrMalformed},
		{"unknown kind", mustMarshal(t, &wireMsg{Kind: 9}), ErrMalformed},
		{"unknown stream kind", mustMarshal(t, &wireMsg{Kind: kindStream, StreamKind: 99}), ErrMalformed},
		{"unknown event kind", mustMarshal(t, &wireMsg{Kind: kindBatch, Events: []wireEvent{{Kind: 7}}}), ErrMalformed},
		{"hashes not whole u64s", mustMarshal(t, &wireMsg{Kind: kindBatch, Events: []wireEvent{{Kind: 1, BlockHashes: []byte{1, 2, 3}}}}), ErrMalformed},
		{"tokens not whole u32s", mustMarshal(t, &wireMsg{Kind: kindBatch, Events: []wireEvent{{Kind: 1, TokenIDs: []byte{1, 2}}}}), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.data)
			assert.ErrorIs(t, err, c.want)
		})
	}
}

func mustMarshal(t *testing.T, m *wireMsg) []byte {
	t.Helper()
	b, err := marshal(m)
	require.NoError(t, err)
	return b
}

func TestSubjectTokenKeepsOneToken(t *testing.T) {
	cases := map[string]string{
		"":                        "_",
		"meta-llama/Llama-3.1-8B": "meta-llama_Llama-3_1-8B",
		"a.b*c>d e\tf":            "a_b_c_d_e_f",
		"plain_name-1":            "plain_name-1",
		"ünï":                     "__n__", // per byte
	}
	for in, want := range cases {
		assert.Equal(t, want, SubjectToken(in), "model %q", in)
	}
	assert.Equal(t, "kvrouter.events.org_m_v1.42.3", eventSubject("kvrouter", testSource))
}

func TestMsgIDsTellRestartsFromReplays(t *testing.T) {
	b := &ingest.Batch{Seq: 0, Timestamp: 100.5}
	again := &ingest.Batch{Seq: 0, Timestamp: 100.5}
	restarted := &ingest.Batch{Seq: 0, Timestamp: 200.25}
	assert.Equal(t, batchMsgID(testSource, b), batchMsgID(testSource, again), "a replayed batch is a duplicate")
	assert.NotEqual(t, batchMsgID(testSource, b), batchMsgID(testSource, restarted), "a new process's seq 0 is new")
	other := testSource
	other.DPRank = 4
	assert.NotEqual(t, batchMsgID(testSource, b), batchMsgID(other, b))
}

// FuzzDecode: no input panics or is half-decoded; what decodes encodes
// back to a message that decodes the same.
func FuzzDecode(f *testing.F) {
	gen := ingesttest.NewGenerator(ingesttest.DefaultSpec(ingesttest.MapEvents))
	dec := ingest.NewDecoder()
	for s := range 3 {
		b, _, err := dec.DecodeBatch("", uint64(s), gen.Next())
		require.NoError(f, err)
		data, err := EncodeBatch(testSource, b)
		require.NoError(f, err)
		f.Add(data)
	}
	ev, err := EncodeStream(testSource, ingest.StreamEvent{Kind: ingest.StreamGapLost, From: 1, To: 2})
	require.NoError(f, err)
	f.Add(ev)
	f.Add([]byte{WireVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		require.True(t, (m.Batch == nil) != (m.Stream == nil), "exactly one of batch and stream event")
		var again []byte
		if m.Batch != nil {
			again, err = EncodeBatch(m.Source, m.Batch)
		} else {
			again, err = EncodeStream(m.Source, *m.Stream)
		}
		require.NoError(t, err)
		m2, err := Decode(again)
		require.NoError(t, err)
		require.Equal(t, m.Source, m2.Source)
	})
}

// FuzzDecodeLoad: load-sync messages from the network never panic.
func FuzzDecodeLoad(f *testing.F) {
	for _, m := range []loadMsg{
		{Op: opRouted, Replica: "a", Instance: "i", ID: "r1", Worker: 1, Prefill: 64, Blocks: []uint64{1, 2}},
		{Op: opHeartbeat, Replica: "b", Instance: "j"},
	} {
		data, err := encodeLoad(&m)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{WireVersion, 0x90})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeLoad(data)
		if err == nil {
			require.NotEmpty(t, m.Replica)
		}
	})
}

// TestDecodeRejectsAByteStringLongerThanAnyMessage: a malformed message
// declaring a 4 GB byte string is an error, not a 4 GB allocation.
func TestDecodeRejectsAByteStringLongerThanAnyMessage(t *testing.T) {
	data, err := EncodeBatch(testSource, &ingest.Batch{Seq: 1, Events: []ingest.Event{{Kind: ingest.BlockStored, BlockHashes: []uint64{7}}}})
	require.NoError(t, err)
	// The hashes' byte string: bin8 of 8 bytes (0xc4 0x08 then the hash).
	at := bytes.Index(data, []byte{0xc4, 0x08, 7, 0, 0, 0, 0, 0, 0, 0})
	require.Positive(t, at)
	bad := append(append(append([]byte{}, data[:at]...), 0xc6, 0xf0, 0, 0, 0), data[at+2:]...) // bin32 of 4 GB
	_, err = Decode(bad)
	require.ErrorIs(t, err, ErrMalformed)
	assert.ErrorIs(t, err, msgpackcheck.ErrLength)
}

// A message declaring an array of a billion elements in a few dozen bytes
// is an error at once, in each of the plane's messages: the MessagePack
// library sized the slice by the header first (70 s and gigabytes for
// one load message the fuzzer found).
func TestDecodeRejectsAnArrayLongerThanAnyMessage(t *testing.T) {
	lie := []byte{0xdd, 0x3b, 0x9a, 0xca, 0x00} // array32 of 1e9
	batch, err := EncodeBatch(testSource, &ingest.Batch{Seq: 1, Events: []ingest.Event{{Kind: ingest.BlockStored, BlockHashes: []uint64{7}}}})
	require.NoError(t, err)
	load, err := encodeLoad(&loadMsg{Op: opRouted, Replica: "a", Instance: "i", ID: "r", Worker: 1, Blocks: []uint64{5}})
	require.NoError(t, err)
	fleet, err := encodeFleet(&fleetMsg{Op: fleetHoldings, Replica: "a", Workers: []uint64{5}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		data   []byte
		list   []byte // the encoded list the lie replaces
		decode func([]byte) error
	}{
		{"batch's events", batch, []byte{0x91}, func(b []byte) error { _, err := Decode(b); return err }},
		{"load's blocks", load, []byte{0x91, 0xcf}, func(b []byte) error { _, err := decodeLoad(b); return err }},
		{"fleet's workers", fleet, []byte{0x91, 0xcf}, func(b []byte) error { _, err := decodeFleet(b); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := bytes.Index(tc.data, tc.list)
			require.Positive(t, at)
			bad := append(append(append([]byte{}, tc.data[:at]...), lie...), tc.data[at+1:]...)
			err := tc.decode(bad)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.ErrorIs(t, err, msgpackcheck.ErrLength, "refused before the library sizes anything")
		})
	}
}
