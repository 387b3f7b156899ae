package indexbench

import (
	"bytes"
	"testing"

	"github.com/kvhash/kvhash/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smallStream(t testing.TB, c StreamConfig) *Stream {
	t.Helper()
	reqs, err := ReadTrace(bytes.NewReader(smallTrace(3, 60)))
	require.NoError(t, err)
	s, err := MakeStream(reqs, c, 2)
	require.NoError(t, err)
	return s
}

func TestStreamRoundTrip(t *testing.T) {
	for _, c := range []StreamConfig{
		{Workers: 4, BlockSize: 16, Evictions: true, CacheTokens: 8192},
		{Workers: 4, BlockSize: 64, Evictions: false},
	} {
		t.Run(c.Name(), func(t *testing.T) {
			s := smallStream(t, c)
			var kinds = map[byte]int{}
			for _, r := range s.Records {
				kinds[r.Kind]++
			}
			assert.Positive(t, kinds[RecMatch])
			assert.Positive(t, kinds[RecStored])
			assert.Positive(t, kinds[RecProbe])
			if c.Evictions {
				assert.Equal(t, uint32(8192/c.BlockSize), s.Header.Capacity)
				assert.Positive(t, kinds[RecRemoved])
			} else {
				assert.Zero(t, kinds[RecRemoved])
				assert.Zero(t, s.Header.Capacity)
			}

			var buf bytes.Buffer
			require.NoError(t, WriteStream(&buf, s))
			got, err := ReadStream(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			require.Equal(t, s.Header, got.Header)
			require.Len(t, got.Records, len(s.Records))
			for i := range s.Records {
				a, b := s.Records[i], got.Records[i]
				assert.Equal(t, a.Kind, b.Kind, "record %d", i)
				assert.Equal(t, a.Worker, b.Worker, "record %d", i)
				assert.Equal(t, a.HasParent, b.HasParent, "record %d", i)
				assert.Equal(t, len(a.Local), len(b.Local), "record %d", i)
				assert.Equal(t, a.Blocks, b.Blocks, "record %d", i)
				assert.Equal(t, len(a.Hashes), len(b.Hashes), "record %d", i)
			}
		})
	}
}

func TestReadStreamErrors(t *testing.T) {
	s := smallStream(t, StreamConfig{Workers: 2, BlockSize: 64, Evictions: true, CacheTokens: 8192})
	var buf bytes.Buffer
	require.NoError(t, WriteStream(&buf, s))
	full := buf.Bytes()

	_, err := ReadStream(bytes.NewReader([]byte("KVSTRM2\n")))
	assert.ErrorContains(t, err, "not a stream file")
	_, err = ReadStream(bytes.NewReader(full[:len(full)-3]))
	assert.ErrorContains(t, err, "unexpected EOF")
	bad := append(append([]byte(nil), full[:24]...), 'X')
	_, err = ReadStream(bytes.NewReader(bad))
	assert.ErrorContains(t, err, `record 0: unknown kind 'X'`)
	huge := append(append([]byte(nil), full[:24]...), 'M', 0xff, 0xff, 0xff, 0xff)
	_, err = ReadStream(bytes.NewReader(huge))
	assert.ErrorContains(t, err, "is over")
	assert.Error(t, WriteStream(&bytes.Buffer{}, &Stream{Records: []StreamRecord{{Kind: 'Z'}}}))
}

// The replay's digest is that of each query's matches, as a plain index
// gives them, and it sees every query: a changed score changes it.
func TestReplayStreamDigest(t *testing.T) {
	s := smallStream(t, StreamConfig{Workers: 4, BlockSize: 16, Evictions: true, CacheTokens: 8192})
	res, err := ReplayStream(s)
	require.NoError(t, err)

	x := core.NewIndex(core.IndexOptions{Mode: core.ModeEnforce})
	d := NewDigest()
	var probes [][]uint64
	queries := 0
	for i, r := range s.Records {
		w := core.Worker{ID: uint64(r.Worker)}
		switch r.Kind {
		case RecMatch:
			d = d.Matches(x.AppendMatches(nil, r.Local, false))
			queries++
		case RecProbe:
			probes = append(probes, r.Local)
		case RecRemoved:
			require.NoError(t, x.ApplyRemoved(w, uint64(i), r.Hashes))
		case RecStored:
			var parent *uint64
			if r.HasParent {
				parent = &r.Parent
			}
			var bs []core.StoredBlock
			for _, b := range r.Blocks {
				bs = append(bs, core.StoredBlock{BlockHash: b[0], TokensHash: b[1]})
			}
			require.NoError(t, x.ApplyStored(w, uint64(i), parent, bs))
		}
	}
	for _, q := range probes {
		d = d.Matches(x.AppendMatches(nil, q, false))
	}
	assert.Equal(t, d, res.Digest)
	assert.Len(t, res.RouteNanos, queries)
	assert.Len(t, res.ProbeNanos, 2*len(probes))
	assert.Positive(t, res.Pairs)

	f := FiguresOf("kvhash", "x", res)
	assert.Positive(t, f.BlockOpsPerS)
	assert.Len(t, f.Digest, 16)
	other := d.Word(1)
	assert.NotEqual(t, d, other)
	assert.Equal(t, "varies", MedianFigures([]Figures{f, {Digest: "0"}, f}).Digest)
	assert.Equal(t, f.Digest, MedianFigures([]Figures{f, f, f}).Digest)
}

func TestSyntheticTraceExpands(t *testing.T) {
	reqs := SyntheticTrace(1, 200)
	require.Len(t, reqs, 200)
	assert.Equal(t, reqs, SyntheticTrace(1, 200))
	s, err := MakeStream(reqs, StreamConfig{Workers: 4, BlockSize: 64, Evictions: true, CacheTokens: 16384}, 1)
	require.NoError(t, err)
	removed := 0
	for _, r := range s.Records {
		removed += len(r.Hashes)
	}
	// The generated trace shares prefixes and overflows small caches.
	assert.Positive(t, removed)
}

// FuzzReadStream: any bytes give a stream or an error, never a panic, and
// a stream read back writes the same bytes.
func FuzzReadStream(f *testing.F) {
	var buf bytes.Buffer
	s := smallStream(f, StreamConfig{Workers: 2, BlockSize: 64, Evictions: true, CacheTokens: 8192})
	s.Records = s.Records[:min(len(s.Records), 6)]
	if err := WriteStream(&buf, s); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(streamMagic))
	f.Add([]byte("KVSTRM1\n\x01\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00P\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadStream(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		require.NoError(t, WriteStream(&out, s))
		back, err := ReadStream(bytes.NewReader(out.Bytes()))
		require.NoError(t, err)
		require.Equal(t, len(s.Records), len(back.Records))
	})
}
