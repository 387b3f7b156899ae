package protocol

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errFake = errors.New("fake rejection")

// fake is a binding that echoes its inputs, to test Serve's translation.
type fake struct{}

func (fake) Hello() Hello {
	return Hello{Binding: "fake", LibraryVersion: "0", SpecVersion: "v1", Ops: []string{OpHello, OpIndex}}
}

func (fake) BlockHashes(tokens []uint32, blockSize int64, opts Options) ([]uint64, error) {
	if blockSize <= 0 {
		return nil, errors.New("bad block size")
	}
	out := []uint64{uint64(len(tokens)), uint64(blockSize), uint64(len(opts.MMHashes))}
	if opts.LoraName != nil {
		out = append(out, uint64(len(*opts.LoraName)))
	}
	return out, nil
}
func (fake) SequenceHashes(h []uint64) ([]uint64, error) { return nil, nil }
func (fake) Seed(l, n string) (uint64, error)            { return uint64(len(l) + len(n)), nil }
func (fake) ChainStep(p, l uint64) (uint64, error)       { return p ^ l, nil }
func (fake) NewIndex(mode string) (Index, error)         { return fakeIndex{}, nil }
func (fake) ErrorKind(err error) string                  { return KindRejected }

type fakeIndex struct{}

func (fakeIndex) ApplyJSON(w uint64, ev []byte) error {
	if string(ev) != `{"ok":1}` {
		return errFake
	}
	return nil
}
func (fakeIndex) FindMatches(h []uint64, early bool) ([]Match, error) {
	return []Match{{WorkerID: 1<<64 - 1, DPRank: 2, Score: uint32(len(h)), TreeSize: 9}}, nil
}
func (fakeIndex) RemoveWorker(uint64) error   { return nil }
func (fakeIndex) ClearAllBlocks(uint64) error { return errFake }
func (fakeIndex) StatsJSON() ([]byte, error)  { return []byte(`{"n":18446744073709551615}`), nil }
func (fakeIndex) Close() error                { return nil }
func (fakeIndex) Dump() ([]string, error)     { return []string{`{"worker_id":1}`}, nil }

func TestServe(t *testing.T) {
	in := strings.Join([]string{
		`{"id":1,"op":"hello"}`,
		`{"id":2,"op":"block_hashes","tokens":[1,2,3],"block_size":4,"options":{"lora_name":"ab","cache_namespace":null,"eagle":false,"mm_hashes":[null]}}`,
		`{"id":3,"op":"block_hashes","tokens":[],"block_size":0,"options":{"lora_name":null,"cache_namespace":null,"eagle":false,"mm_hashes":null}}`,
		`{"id":4,"op":"seed","lora_name":"x","cache_namespace":"yz"}`,
		`{"id":5,"op":"chain_step","parent":"18446744073709551615","local":"1"}`,
		`{"id":6,"op":"raw_hash","bytes_hex":"00"}`,
		`{"id":7,"op":"index","mode":"warn","steps":[{"apply":{"worker_id":"1","event":"{\"ok\":1}"}},{"apply":{"worker_id":"1","event":"x"}},{"find_matches":{"hashes":["1","2"],"early_exit":true}},{"clear_all_blocks":{"worker_id":"1"}},{"stats":{}},{"dump":{}},{}]}`,
		`{"id":8,"op":"nope"}`,
		`{"id":9,"op":"seed","lora_name":5}`,
		`not json`,
	}, "\n") + "\n"
	var out strings.Builder
	require.NoError(t, Serve(strings.NewReader(in), &out, fake{}))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 10, "one answer per request")
	want := []string{
		`{"binding":"fake","id":1,"library_version":"0","ops":["hello","index"],"spec_version":"v1"}`,
		`{"block_hashes":["3","4","1","2"],"id":2}`,
		`{"error":"bad block size","id":3}`,
		`{"id":4,"seed":"3"}`,
		`{"hash":"18446744073709551614","id":5}`,
		`{"error":"unsupported op \"raw_hash\"","id":6}`,
		`{"id":7,"results":[{"ok":true},{"error":"rejected","message":"fake rejection"},` +
			`{"scores":[{"worker_id":"18446744073709551615","dp_rank":2,"score":2,"tree_size":"9"}]},` +
			`{"error":"rejected","message":"fake rejection"},{"stats":{"n":18446744073709551615}},` +
			`{"events":["{\"worker_id\":1}"]},` +
			`{"error":"invalid_argument","message":"step has no known operation"}]}`,
		`{"error":"unknown op \"nope\"","id":8}`,
	}
	for i, w := range want {
		assert.Equal(t, w, lines[i], "answer %d", i+1)
	}
	assert.Contains(t, lines[8], `"id":9`)
	assert.Contains(t, lines[8], `"error":"bad request`)
	assert.Contains(t, lines[9], `"error":"bad request`)
}
