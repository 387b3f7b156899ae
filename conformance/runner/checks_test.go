package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/conformance/testees/protocol"
)

func ans(t *testing.T, s string) answer {
	t.Helper()
	var a answer
	require.NoError(t, json.Unmarshal([]byte(s), &a))
	return a
}

func TestCompareAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, op, want, got, reason string
	}{
		{"equal", protocol.OpBlockHashes, `{"block_hashes":["1","2"]}`, `{"id":3,"block_hashes":["1","2"]}`, ""},
		{"empty", protocol.OpBlockHashes, `{"block_hashes":[]}`, `{"block_hashes":[]}`, ""},
		{"null is not empty", protocol.OpBlockHashes, `{"block_hashes":[]}`, `{"block_hashes":null}`, "must be an array"},
		{"differs", protocol.OpBlockHashes, `{"block_hashes":["1","2"]}`, `{"block_hashes":["1","3"]}`, "block_hashes[1]: expected 2, got 3"},
		{"shorter", protocol.OpSequenceHashes, `{"sequence_hashes":["1"]}`, `{"sequence_hashes":[]}`, "expected 1 values, got 0"},
		{"bare number", protocol.OpSeed, `{"seed":"1337"}`, `{"seed":1337}`, "must be a u64 decimal string"},
		{"rounded", protocol.OpChainStep, `{"hash":"18446744073709551615"}`, `{"hash":"18446744073709551616"}`, "must be a u64 decimal string"},
		{"missing", protocol.OpSeed, `{"seed":"1"}`, `{}`, `answer has no "seed"`},
		{"unexpected error", protocol.OpSeed, `{"seed":"1"}`, `{"error":"boom"}`, "unexpected error"},
		{"expected error", protocol.OpBlockHashes, `{"error":"block_size_zero"}`, `{"error":"bad"}`, ""},
		{"no error", protocol.OpBlockHashes, `{"error":"block_size_zero"}`, `{"block_hashes":[]}`, "expected an error"},
		{"error and result", protocol.OpBlockHashes, `{"error":"x"}`, `{"error":"bad","block_hashes":[]}`, "without a result"},
	} {
		got := compareAnswer(tc.op, ans(t, tc.want), ans(t, tc.got))
		if tc.reason == "" {
			assert.Empty(t, got, tc.name)
		} else {
			assert.Contains(t, got, tc.reason, tc.name)
		}
	}
}

func TestCompareStep(t *testing.T) {
	for _, tc := range []struct {
		name, want, got, reason string
	}{
		{"ok", `{"ok":true}`, `{"ok":true}`, ""},
		{"same kind, other words", `{"error":"rejected","message":"a"}`, `{"error":"rejected","message":"b"}`, ""},
		{"other kind", `{"error":"rejected"}`, `{"error":"decode"}`, "expected error rejected, got error decode"},
		{"ok vs error", `{"ok":true}`, `{"error":"rejected"}`, "expected ok, got error rejected"},
		{"scores in any order", `{"scores":[{"worker_id":"1","dp_rank":0,"score":1,"tree_size":"1"},{"worker_id":"2","dp_rank":0,"score":1,"tree_size":"1"}]}`,
			`{"scores":[{"worker_id":"2","dp_rank":0,"score":1,"tree_size":"1"},{"worker_id":"1","dp_rank":0,"score":1,"tree_size":"1"}]}`, ""},
		{"tree size", `{"scores":[{"worker_id":"1","dp_rank":0,"score":1,"tree_size":"1"}]}`,
			`{"scores":[{"worker_id":"1","dp_rank":0,"score":1,"tree_size":"2"}]}`, "scores differ"},
		{"no scores", `{"scores":[]}`, `{"scores":null}`, "scores missing"},
		{"stats as values", `{"stats":{"a":1,"b":[18446744073709551615]}}`, `{"stats":{"b":[18446744073709551615],"a":1}}`, ""},
		{"stats rounded", `{"stats":{"w":9007199254740993}}`, `{"stats":{"w":9007199254740992}}`, "stats differ"},
		{"dump keys in any order", `{"events":["{\"worker_id\":1,\"event\":{\"event_id\":4,\"data\":\"cleared\"}}","{\"worker_id\":18446744073709551615}"]}`,
			`{"events":["{\"event\":{\"data\":\"cleared\",\"event_id\":4},\"worker_id\":1}","{\"worker_id\":18446744073709551615}"]}`, ""},
		{"dump reordered", `{"events":["{\"worker_id\":1}","{\"worker_id\":2}"]}`, `{"events":["{\"worker_id\":2}","{\"worker_id\":1}"]}`, "dump: expected event"},
		{"dump event id", `{"events":["{\"event\":{\"event_id\":4}}"]}`, `{"events":["{\"event\":{\"event_id\":9}}"]}`, "dump: expected event"},
		{"dump differs", `{"events":["{\"worker_id\":18446744073709551615}"]}`, `{"events":["{\"worker_id\":18446744073709551614}"]}`, "dump: expected event"},
		{"dump shorter", `{"events":["{}"]}`, `{"events":[]}`, "expected 1 events, got 0"},
		{"bare u64", `{"scores":[]}`, `{"scores":[{"worker_id":1,"dp_rank":0,"score":1,"tree_size":"1"}]}`, "unreadable"},
	} {
		got := compareStep(json.RawMessage(tc.want), json.RawMessage(tc.got))
		if tc.reason == "" {
			assert.Empty(t, got, tc.name)
		} else {
			assert.Contains(t, got, tc.reason, tc.name)
		}
	}
}

func TestLoadGroupsRejectsUnknownKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g.json"),
		[]byte(`{"spec":"v1","group":"g","cases":[{"kind":"novel","name":"x"}]}`), 0o644))
	_, err := loadGroups(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown case kind "novel"`)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "g.json"),
		[]byte(`{"spec":"v2","group":"g","cases":[]}`), 0o644))
	_, err = loadGroups(dir)
	assert.ErrorContains(t, err, `spec "v2"`)
}

func TestVectorGroupsLoad(t *testing.T) {
	groups, err := loadGroups("../vectors/v1")
	require.NoError(t, err)
	require.NotEmpty(t, groups)
	for _, g := range groups {
		assert.NotEmpty(t, g.Checks, g.Name)
		for _, c := range g.Checks {
			require.Len(t, c.Want, len(c.Reqs), "%s/%s", g.Name, c.Name)
		}
	}
}

func TestGeneratedCasesAreDeterministic(t *testing.T) {
	lim := genLimits{MaxTokens: 4096, MaxBlockSize: 512}
	a, b := genCases(9, 200, lim), genCases(9, 200, lim)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, genCases(10, 200, lim))
	var eagle, mm, lora, invalid, long int
	for _, c := range a {
		assert.LessOrEqual(t, len(c.Tokens), 4096)
		assert.LessOrEqual(t, c.BlockSize, int64(512))
		if c.Options.Eagle {
			eagle++
		}
		if c.Options.MMHashes != nil {
			mm++
		}
		if c.Options.LoraName != nil {
			lora++
		}
		if c.BlockSize <= 0 {
			invalid++
		}
		if len(c.Tokens) > 512 {
			long++
		}
	}
	for name, n := range map[string]int{"eagle": eagle, "mm": mm, "lora": lora, "long": long} {
		assert.Positive(t, n, name)
	}
	assert.Equal(t, genScripts(3, 100), genScripts(3, 100))
}

func TestCellText(t *testing.T) {
	assert.Equal(t, "5/5", cellText(&cell{Passed: 5, Total: 5}))
	assert.Equal(t, "4/5 FAIL", cellText(&cell{Passed: 4, Total: 5, Failed: 1}))
	assert.Equal(t, "n/a", cellText(&cell{NA: 29}))
	assert.Equal(t, "4/4 +1 n/a", cellText(&cell{Passed: 4, Total: 4, NA: 1}))
	assert.Equal(t, "9/9 ref", cellText(&cell{Passed: 9, Total: 9, Ref: true}))
	assert.Equal(t, "FAIL", cellText(&cell{Total: 3, Error: "missing"}))
}

// Testee output is untrusted: no answer may crash the comparison.
func FuzzCompareStep(f *testing.F) {
	f.Add([]byte(`{"ok":true}`), []byte(`{"error":"rejected"}`))
	f.Add([]byte(`{"scores":[{"worker_id":"1","dp_rank":0,"score":1,"tree_size":"1"}]}`), []byte(`{"scores":null}`))
	f.Add([]byte(`{"events":["{}"]}`), []byte(`{"events":["{\"event\":7}"]}`))
	f.Add([]byte(`{"stats":{"a":1}}`), []byte(`{"stats":[`))
	f.Fuzz(func(t *testing.T, want, got []byte) {
		_ = compareStep(want, got)
	})
}

func FuzzCompareAnswer(f *testing.F) {
	f.Add(`{"block_hashes":["1"]}`, `{"block_hashes":["1"],"id":1}`)
	f.Add(`{"error":"x"}`, `{"seed":7}`)
	f.Fuzz(func(t *testing.T, want, got string) {
		var w, g answer
		if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(got), &g) != nil {
			return
		}
		for _, op := range []string{protocol.OpBlockHashes, protocol.OpSeed, protocol.OpChainStep} {
			_ = compareAnswer(op, w, g)
		}
	})
}
