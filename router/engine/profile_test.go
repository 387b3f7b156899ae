package engine

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultProfileIsTheMockers(t *testing.T) {
	p := DefaultProfile()
	assert.Equal(t, "dynamo-mocker", p.Name)
	// The mocker's numbers (docs/mocker/mocker.md, lib/mocker protocols.rs).
	assert.InDelta(t, 4.209989e-7*1e6+1.518344e-2*1000+16.50142, p.PrefillMs(1000), 1e-9)
	assert.InDelta(t, 32.1058589, p.PrefillMs(1000), 1e-6)
	assert.Zero(t, p.PrefillMs(0))
	assert.InDelta(t, 5.74, p.DecodeMs(0), 1e-12)
	assert.InDelta(t, -25.74+54.01+5.74, p.DecodeMs(1), 1e-12)
	assert.InDelta(t, -25.74*0.25+54.01*0.5+5.74, p.DecodeMs(0.5), 1e-12)
	assert.Zero(t, p.PrefillContext)
	assert.False(t, p.PrefillPerSequence)

	loaded, err := LoadProfile(filepath.Join("profiles", "dynamo-mocker.json"))
	require.NoError(t, err)
	assert.Equal(t, p, loaded)
}

func TestDecodeFloor(t *testing.T) {
	p := DefaultProfile()
	p.DecodeP0 = -10
	assert.Equal(t, 1.0, p.DecodeMs(0))
}

func TestParseProfileRefusesBadFiles(t *testing.T) {
	good := `{"name":"x","prefill_t2_ms":0,"prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,
		"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1}`
	_, err := ParseProfile([]byte(good))
	require.NoError(t, err)

	for name, body := range map[string]string{
		"unknown field":  `{"name":"x","prefill_t2_ms":0,"prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1,"decode_p3_ms":1}`,
		"missing field":  `{"name":"x","prefill_t2_ms":0,"prefill_t1_ms":1,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1}`,
		"no name":        `{"prefill_t2_ms":0,"prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1}`,
		"negative floor": `{"name":"x","prefill_t2_ms":0,"prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":-1}`,
		"not a number":   `{"name":"x","prefill_t2_ms":"NaN","prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1}`,
		"too large":      `{"name":"x","prefill_t2_ms":1e999,"prefill_t1_ms":1,"prefill_t0_ms":0,"prefill_context_ms":0,"decode_p2_ms":0,"decode_p1_ms":0,"decode_p0_ms":5,"decode_min_ms":1}`,
		"two values":     good + good,
		"not json":       `name: x`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseProfile([]byte(body))
			assert.Error(t, err)
		})
	}
}

func TestProfileValidateRefusesNonFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		p := DefaultProfile()
		p.DecodeP1 = v
		assert.Error(t, p.Validate())
		cfg := DefaultConfig()
		cfg.Profile = p
		_, err := New(cfg)
		assert.Error(t, err)
	}
}

func TestLoadProfileMissingFile(t *testing.T) {
	_, err := LoadProfile(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func FuzzParseProfile(f *testing.F) {
	f.Add(dynamoMockerJSON)
	f.Add([]byte(`{"name":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProfile(b)
		if err != nil {
			return
		}
		require.NoError(t, p.Validate())
		require.NotEmpty(t, p.Name)
	})
}
