package ingest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
)

// The golden files are engine payloads written by msgspec over structs
// declared as vLLM and SGLang declare theirs (testdata/gen_golden.py),
// each beside the fields Python says it holds. The decoder must read the
// same fields from the same bytes.
func TestDecodeGoldenPayloads(t *testing.T) {
	checkPayloadDir(t, "testdata/golden")
}

// Random batches in every layout, written by the same msgspec structs
// (gen_golden.py --random; a fixed seed: reproducible), checked the same
// way: a differential test of the decoder against msgspec.
func TestDecodeRandomMsgspecBatches(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(enginetest.VenvPython(t), "testdata/gen_golden.py", "--random", "300", "--seed", "11", "--out", dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	checkPayloadDir(t, dir)
}

func checkPayloadDir(t *testing.T, dir string) {
	payloads, err := filepath.Glob(filepath.Join(dir, "*.msgpack"))
	require.NoError(t, err)
	require.NotEmpty(t, payloads, "no payloads in %s: run testdata/gen_golden.py", dir)
	dec := NewDecoder()
	for _, path := range payloads {
		name := strings.TrimSuffix(filepath.Base(path), ".msgpack")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(path)
			require.NoError(t, err)
			want := readGoldenWant(t, strings.TrimSuffix(path, ".msgpack")+".json")

			b, unknown, err := dec.DecodeBatch(want.Topic, want.Seq, payload)
			require.NoError(t, err)
			assert.Equal(t, want.Topic, b.Topic)
			assert.Equal(t, want.Seq, b.Seq)
			assert.Equal(t, want.TS, b.Timestamp) //nolint:testifylint // exact: the same float64 bits
			assert.Equal(t, want.Unknown, unknown)
			if want.DPRank == nil {
				assert.Nil(t, b.DPRank)
			} else {
				require.NotNil(t, b.DPRank)
				assert.Equal(t, *want.DPRank, *b.DPRank)
			}
			require.Len(t, b.Events, len(want.Events))
			for i, wantEv := range want.Events {
				got := normalize(t, eventFields(&b.Events[i]))
				for key, wantVal := range wantEv {
					assert.Equal(t, wantVal, got[key], "event %d field %s", i, key)
				}
			}
		})
	}
}

type goldenWant struct {
	Topic   string           `json:"topic"`
	Seq     uint64           `json:"seq"`
	TS      float64          `json:"ts"`
	DPRank  *uint32          `json:"data_parallel_rank"`
	Unknown int              `json:"unknown"`
	Events  []map[string]any `json:"-"`
}

func readGoldenWant(t *testing.T, path string) goldenWant {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Want json.RawMessage `json:"want"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var want goldenWant
	require.NoError(t, json.Unmarshal(doc.Want, &want))
	var events struct {
		Events []any `json:"events"`
	}
	d := json.NewDecoder(bytes.NewReader(doc.Want))
	d.UseNumber() // u64 hashes: never through float64
	require.NoError(t, d.Decode(&events))
	for _, e := range events.Events {
		want.Events = append(want.Events, e.(map[string]any))
	}
	return want
}

// eventFields names an Event's fields as the engines do.
func eventFields(ev *Event) map[string]any {
	str := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	m := map[string]any{
		"kind":                         ev.Kind.String(),
		"block_hashes":                 ev.BlockHashes,
		"parent_block_hash":            ev.ParentHash,
		"token_ids":                    ev.TokenIDs,
		"block_size":                   ev.BlockSize,
		"lora_id":                      ev.LoraID,
		"medium":                       str(ev.Medium),
		"lora_name":                    str(ev.LoraName),
		"extra_keys":                   ev.ExtraKeys,
		"group_idx":                    ev.GroupIdx,
		"kv_cache_spec_kind":           str(ev.SpecKind),
		"kv_cache_spec_sliding_window": ev.SlidingWindow,
		"locality":                     str(ev.Locality),
		"ownership":                    str(ev.Ownership),
		"session_id":                   str(ev.SessionID),
		"cache_salt":                   str(ev.CacheSalt),
		"lookahead_token_ids":          ev.LookaheadTokenIDs,
	}
	return m
}

// normalize passes a value through JSON (numbers kept exact) so that Go's
// and Python's sides compare as the same types.
func normalize(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out map[string]any
	require.NoError(t, d.Decode(&out))
	return out
}
