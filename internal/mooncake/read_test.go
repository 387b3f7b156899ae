package mooncake

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadRejectsMalformedTracesByLine(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "trace: no requests"},
		{"only blank lines", "\n\n", "trace: no requests"},
		{"not JSON", "{", "trace line 1: unexpected end of JSON input"},
		{"wrong field type on line 2", "\n" + `{"input_length": "x", "hash_ids": [1]}`, "trace line 2: json: cannot unmarshal"},
		{"no hash ids", `{"input_length": 10, "hash_ids": []}`, "trace line 1: input_length 10 does not fit 0 hash ids: no hash_ids"},
		{"too long for its ids", `{"input_length": 1025, "hash_ids": [1, 2]}`, "trace line 1: input_length 1025 does not fit 2 hash ids of 512 tokens"},
		{"too short for its ids", `{"input_length": 512, "hash_ids": [1, 2]}`, "trace line 1: input_length 512 does not fit 2 hash ids"},
		{"negative output", `{"input_length": 5, "output_length": -1, "hash_ids": [1]}`, "trace line 1: negative output_length -1"},
		{"negative timestamp", `{"timestamp": -3, "input_length": 5, "hash_ids": [1]}`, "trace line 1: negative output_length 0 or timestamp -3"},
		{"good line then bad", `{"input_length": 5, "hash_ids": [1]}` + "\n" + `{"input_length": 600, "hash_ids": [1]}`, "trace line 2: input_length 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, err := Read[float64](strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
			assert.Nil(t, reqs)
		})
	}
}

func TestReadAcceptsValidLines(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [0, 1]}` + "\n\n" +
		`{"timestamp": 27, "input_length": 512, "output_length": 1, "hash_ids": [0]}` + "\n" +
		`{"timestamp": 30, "input_length": 1, "output_length": 0, "hash_ids": [7]}`
	reqs, err := Read[int64](strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []Request[int64]{
		{Timestamp: 0, InputLength: 600, OutputLength: 4, HashIDs: []uint64{0, 1}},
		{Timestamp: 27, InputLength: 512, OutputLength: 1, HashIDs: []uint64{0}},
		{Timestamp: 30, InputLength: 1, OutputLength: 0, HashIDs: []uint64{7}},
	}, reqs)
}

// The timestamp type decides whether fractional milliseconds are allowed.
func TestReadTimestampType(t *testing.T) {
	in := `{"timestamp": 2.5, "input_length": 5, "hash_ids": [1]}`
	floats, err := Read[float64](strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, 2.5, floats[0].Timestamp)

	_, err = Read[int64](strings.NewReader(in))
	require.ErrorContains(t, err, "trace line 1: json: cannot unmarshal number 2.5")
}

func TestReadReportsReaderFailure(t *testing.T) {
	_, err := Read[int64](iotest.ErrReader(errors.New("disk gone")))
	require.ErrorContains(t, err, "trace: disk gone")
}

func TestWriteReadsBackAsWritten(t *testing.T) {
	reqs := []Request[float64]{
		{Timestamp: 0, InputLength: 600, OutputLength: 4, HashIDs: []uint64{0, 1}},
		{Timestamp: 12.25, InputLength: 1024, OutputLength: 9, HashIDs: []uint64{0, 2}},
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, reqs))
	assert.Equal(t, 2, strings.Count(buf.String(), "\n"), "one line a request")
	back, err := Read[float64](&buf)
	require.NoError(t, err)
	assert.Equal(t, reqs, back)
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()

	_, err := ReadFile[int64](filepath.Join(dir, "missing.jsonl"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\n"), 0o600))
	_, err = ReadFile[int64](bad)
	require.ErrorContains(t, err, bad+": trace line 1:")

	good := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(`{"timestamp": 4, "input_length": 3, "output_length": 2, "hash_ids": [9]}`+"\n"), 0o600))
	reqs, err := ReadFile[int64](good)
	require.NoError(t, err)
	assert.Equal(t, []Request[int64]{{Timestamp: 4, InputLength: 3, OutputLength: 2, HashIDs: []uint64{9}}}, reqs)
}
