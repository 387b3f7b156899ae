package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr(s string) *string { return &s }

// Each op is written with exactly its fields, always present.
func TestRequestWireShape(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{ID: 1, Op: OpHello}, `{"id":1,"op":"hello"}`},
		{Request{ID: 2, Op: OpBlockHashes, BlockSize: 0},
			`{"id":2,"op":"block_hashes","tokens":[],"block_size":0,"options":{"lora_name":null,"cache_namespace":null,"eagle":false,"mm_hashes":null}}`},
		{Request{ID: 3, Op: OpBlockHashes, Tokens: []uint32{1, 4294967295}, BlockSize: -4,
			Options: Options{LoraName: ptr(""), Eagle: true, MMHashes: [][]U64{nil, {}, {1<<64 - 1}}}},
			`{"id":3,"op":"block_hashes","tokens":[1,4294967295],"block_size":-4,"options":{"lora_name":"","cache_namespace":null,"eagle":true,"mm_hashes":[null,[],["18446744073709551615"]]}}`},
		{Request{ID: 4, Op: OpSequenceHashes}, `{"id":4,"op":"sequence_hashes","block_hashes":[]}`},
		{Request{ID: 5, Op: OpSeed, CacheNamespace: ptr("t")}, `{"id":5,"op":"seed","lora_name":null,"cache_namespace":"t"}`},
		{Request{ID: 6, Op: OpChainStep, Parent: 1, Local: 2}, `{"id":6,"op":"chain_step","parent":"1","local":"2"}`},
		{Request{ID: 7, Op: OpRawHash}, `{"id":7,"op":"raw_hash","bytes_hex":""}`},
		{Request{ID: 8, Op: OpIndex, Mode: ModeWarn, Steps: []Step{
			{Apply: &ApplyStep{WorkerID: 7, Event: `{"event_id":1}`}},
			{FindMatches: &FindMatchesStep{Hashes: []U64{14}}},
			{FindMatches: &FindMatchesStep{EarlyExit: true}},
			{RemoveWorker: &WorkerStep{WorkerID: 7}},
			{ClearAllBlocks: &WorkerStep{WorkerID: 8}},
			{Stats: &StatsStep{}},
		}}, `{"id":8,"op":"index","mode":"warn","steps":[{"apply":{"worker_id":"7","event":"{\"event_id\":1}"}},` +
			`{"find_matches":{"hashes":["14"],"early_exit":false}},{"find_matches":{"hashes":[],"early_exit":true}},{"remove_worker":{"worker_id":"7"}},` +
			`{"clear_all_blocks":{"worker_id":"8"}},{"stats":{}}]}`},
	} {
		data, err := json.Marshal(tc.req)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(data))
		var back Request
		require.NoError(t, json.Unmarshal(data, &back))
		again, err := json.Marshal(back)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(again), "decode then encode is the identity")
	}
}

func FuzzRequestDecode(f *testing.F) {
	f.Add([]byte(`{"id":3,"op":"block_hashes","tokens":[1],"block_size":4,"options":{"lora_name":"a","cache_namespace":null,"eagle":true,"mm_hashes":[null,["1"]]}}`))
	f.Add([]byte(`{"id":8,"op":"index","mode":"warn","steps":[{"stats":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		if json.Unmarshal(data, &r) != nil {
			return
		}
		out, err := json.Marshal(r)
		require.NoError(t, err)
		var back Request
		require.NoError(t, json.Unmarshal(out, &back), "what we write we read: %s", out)
	})
}
