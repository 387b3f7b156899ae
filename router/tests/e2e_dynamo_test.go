package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/enginetest"
)

// dynamoIndexer runs Dynamo's own standalone KV indexer (`python -m
// dynamo.indexer` from Dynamo's wheel in build/venv) on loopback: the
// oracle kvrouter's drop-in endpoints are held to.
func dynamoIndexer(t *testing.T) string {
	t.Helper()
	port := enginetest.FreePorts(t, 1)
	logPath := filepath.Join(t.TempDir(), "dynamo-indexer.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(enginetest.VenvPython(t), "-m", "dynamo.indexer", "--port", fmt.Sprint(port), "--threads", "1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("Dynamo indexer log:\n%s", out)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	eventually(t, "Dynamo's indexer to listen", func() bool {
		code, _ := getTextQuiet(url + "/health")
		return code == 200
	})
	return url
}

// both sends one request to kvrouter and to Dynamo and requires the same
// status and the same JSON answer (normalize, when given, rewrites both
// answers first).
func both(t *testing.T, ours, theirs, method, path string, body any, normalize func(any) any) any {
	t.Helper()
	var rawA, rawB json.RawMessage
	codeA := call(t, ours, method, path, body, &rawA)
	codeB := call(t, theirs, method, path, body, &rawB)
	a, b := jsonOrText(rawA), jsonOrText(rawB)
	require.Equal(t, codeB, codeA, "%s %s %v: status; kvrouter %v, Dynamo %v", method, path, body, a, b)
	if normalize != nil {
		a, b = normalize(a), normalize(b)
	}
	if codeA >= 400 {
		// Dynamo's error texts are its own; the shape is the contract.
		ea, oka := a.(map[string]any)
		eb, okb := b.(map[string]any)
		if okb {
			require.True(t, oka, "kvrouter's error body %v", a)
			_, hasA := ea["error"].(string)
			_, hasB := eb["error"].(string)
			assert.Equal(t, hasB, hasA, "error body shape: kvrouter %v, Dynamo %v", a, b)
		}
		return a
	}
	assert.Equal(t, jsonText(t, b), jsonText(t, a), "%s %s %v", method, path, body)
	return a
}

// jsonOrText decodes a JSON answer; Dynamo answers some errors in plain
// text (axum's 422s), kept as a string.
func jsonOrText(raw []byte) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", " ")
	require.NoError(t, enc.Encode(v)) // maps encode with sorted keys
	return buf.String()
}

// workersShape keeps what a client reads of GET /workers: each instance's
// identity and endpoints, sorted (listener states race with the test).
func workersShape(v any) any {
	list, _ := v.([]any)
	out := []any{}
	for _, w := range list {
		m := w.(map[string]any)
		out = append(out, map[string]any{
			"instance_id": m["instance_id"], "model_name": m["model_name"], "routing_group": m["routing_group"],
			"block_size": m["block_size"], "endpoints": m["endpoints"],
		})
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// dumpShape reduces GET /dump to, per index, its block size and the set
// of (worker, rank, engine hash, local hash) it holds.
func dumpShape(v any) any {
	m, _ := v.(map[string]any)
	out := map[string]any{}
	for key, entry := range m {
		e := entry.(map[string]any)
		var blocks []string
		for _, ev := range e["events"].([]any) {
			re := ev.(map[string]any)
			inner := re["event"].(map[string]any)
			data, ok := inner["data"].(map[string]any)
			if !ok {
				continue
			}
			st, ok := data["stored"].(map[string]any)
			if !ok {
				continue
			}
			for _, b := range st["blocks"].([]any) {
				bm := b.(map[string]any)
				blocks = append(blocks, fmt.Sprintf("%v/%v/%v/%v", re["worker_id"], inner["dp_rank"], bm["block_hash"], bm["tokens_hash"]))
			}
		}
		slices.Sort(blocks)
		out[key] = map[string]any{"block_size": e["block_size"], "blocks": blocks}
	}
	return out
}

// Dynamo's standalone indexer and kvrouter, fed the same registrations and
// the same engine streams, answer every endpoint the same.
func TestE2EDynamoStandaloneIndexerDifferential(t *testing.T) {
	dyn := dynamoIndexer(t)
	eng := startEngines(t)
	r := startRouter(t, testConfig())
	ours := r.url
	base := enginetest.FreePorts(t, 5)

	type reg struct {
		name string
		body obj
	}
	regs := []reg{
		{"a", obj{"instance_id": 1, "endpoint": enginetest.TCP(base), "model_name": "llama", "block_size": blockSize}},
		{"b0", obj{"instance_id": 2, "endpoint": enginetest.TCP(base + 1), "model_name": "llama", "block_size": blockSize, "dp_rank": 0}},
		{"b1", obj{"instance_id": 2, "endpoint": enginetest.TCP(base + 2), "model_name": "llama", "block_size": blockSize, "dp_rank": 1}},
		{"c", obj{"instance_id": 3, "endpoint": enginetest.TCP(base + 3), "model_name": "llama", "routing_group": "acme", "block_size": blockSize}},
		{"d", obj{"instance_id": uint64(18446744073709551615), "endpoint": enginetest.TCP(base + 4), "model_name": "mistral", "block_size": blockSize, "tenant_id": "ignored", "unknown_field": 1}},
	}
	for i, rg := range regs {
		eng.open(rg.name, enginetest.TCP(base+i), "", nil)
	}
	for _, rg := range regs {
		both(t, ours, dyn, "POST", "/register", rg.body, nil)
	}
	for _, rg := range regs {
		eng.waitSub(rg.name) // kvrouter's subscription
		eng.waitSub(rg.name) // Dynamo's
	}

	shared := tokens(100, 16)
	p := func(h int64) *int64 { return &h }
	eng.send("a", []obj{stored(hashes(1000, 4), nil, shared, nil)}, nil)
	eng.send("a", []obj{stored(hashes(1004, 2), p(1003), tokens(200, 8), nil)}, obj{"layout": "array"})
	// Engines with a deterministic block hash (vLLM's sha256_cbor) name the
	// same content alike: the same ids on every worker.
	eng.send("b0", []obj{stored(hashes(1000, 2), nil, shared[:8], nil)}, obj{"dp_rank": 0})
	eng.send("b1", []obj{stored(hashes(1000, 4), nil, shared, nil), stored(hashes(3100, 2), nil, tokens(700, 8), obj{"lora_name": "ad"})}, obj{"dp_rank": 1})
	eng.send("b1", []obj{{"type": "BlockRemoved", "block_hashes": []int64{1003, 3101}}}, obj{"dp_rank": 1})
	eng.send("c", []obj{stored(hashes(1000, 4), nil, shared, nil)}, nil)
	// Negative (i64) hashes as SGLang and TensorRT-LLM send them. (Dynamo
	// 1.6.1 cannot decode bytes hashes: vLLM's bytes form is left out.)
	eng.send("d", []obj{stored(hashes(-5000, 3), nil, shared[:12], nil)}, obj{"layout": "map"})
	// Sentinels, last on each stream: once both see them, both saw all.
	sentinels := []string{"a", "b0", "b1", "c", "d"}
	for i, name := range sentinels {
		rank := 0
		if name == "b1" {
			rank = 1
		}
		eng.send(name, []obj{stored([]int64{int64(9_000_000 + i)}, nil, tokens(50_000+8*i, 4), nil)}, obj{"dp_rank": rank})
	}
	const want = 4 + 2 + 2 + 4 + 2 - 2 + 4 + 3 + 5 // stores - removes + sentinels
	for _, url := range []string{dyn, ours} {
		var got map[string]any
		deadline := time.Now().Add(e2eWait)
		for {
			var dump map[string]any
			require.Equal(t, 200, call(t, url, "GET", "/dump", nil, &dump))
			got = dumpShape(dump).(map[string]any)
			n := 0
			for _, e := range got {
				n += len(e.(map[string]any)["blocks"].([]string))
			}
			if n == want {
				break
			}
			require.False(t, time.Now().After(deadline), "%s holds %d blocks, want %d: %v", url, n, want, got)
			time.Sleep(20 * time.Millisecond)
		}
	}

	queries := []obj{
		{"token_ids": shared, "model_name": "llama"},
		{"token_ids": shared[:9], "model_name": "llama"},
		{"token_ids": append(slices.Clone(shared), tokens(200, 8)...), "model_name": "llama"},
		{"token_ids": shared, "model_name": "llama", "routing_group": "acme"},
		{"token_ids": shared, "model_name": "llama", "tenant_id": "acme"},
		{"token_ids": tokens(700, 8), "model_name": "llama", "lora_name": "ad"},
		{"token_ids": tokens(700, 8), "model_name": "llama"},
		{"token_ids": shared, "model_name": "llama", "cache_salt": "s"},
		{"token_ids": shared, "model_name": "mistral"},
		{"token_ids": []int{}, "model_name": "llama"},
		{"token_ids": shared, "model_name": "nope"},
		{"token_ids": shared},
		{"token_ids": []int{-1}, "model_name": "llama"},
		{"token_ids": "abc", "model_name": "llama"},
	}
	for _, q := range queries {
		both(t, ours, dyn, "POST", "/query", q, nil)
	}
	local, err := core.BlockHashes(shared, blockSize, core.Options{})
	require.NoError(t, err)
	asI64 := make([]int64, len(local))
	for i, h := range local {
		asI64[i] = int64(h) // Dynamo's wire: the hash's bits as i64
	}
	for _, q := range []obj{
		{"block_hashes": asI64, "model_name": "llama"},
		{"block_hashes": asI64[1:], "model_name": "llama"},
		{"block_hashes": asI64, "model_name": "mistral"},
		{"block_hashes": asI64, "model_name": "llama", "routing_group": "acme"},
		{"block_hashes": asI64, "model_name": "llama", "cache_salt": "s"},
		{"block_hashes": asI64, "model_name": "nope"},
		{"model_name": "llama"},
	} {
		both(t, ours, dyn, "POST", "/query_by_hash", q, nil)
	}
	both(t, ours, dyn, "POST", "/query_by_hash", `{"block_hashes":[18446744073709551615],"model_name":"llama"}`, nil)
	both(t, ours, dyn, "GET", "/workers", nil, workersShape)
	both(t, ours, dyn, "GET", "/workers?model_name=llama", nil, workersShape)
	both(t, ours, dyn, "GET", "/workers?routing_group=acme", nil, workersShape)
	both(t, ours, dyn, "GET", "/workers?model_name=none", nil, workersShape)
	both(t, ours, dyn, "GET", "/dump", nil, dumpShape)

	// Registration errors.
	for _, body := range []any{
		obj{"instance_id": 1, "endpoint": enginetest.TCP(base), "model_name": "llama", "block_size": blockSize},            // again
		obj{"instance_id": 2, "endpoint": enginetest.TCP(base + 3), "model_name": "llama", "block_size": 16, "dp_rank": 2}, // block size
		obj{"instance_id": 1, "endpoint": enginetest.TCP(base + 3), "model_name": "mistral", "block_size": blockSize},      // other model
		obj{"instance_id": 7, "endpoint": "bogus", "model_name": "llama", "block_size": blockSize},
		obj{"instance_id": -1, "endpoint": enginetest.TCP(base), "model_name": "llama", "block_size": blockSize},
		obj{"endpoint": enginetest.TCP(base), "model_name": "llama", "block_size": blockSize},
		"not json",
	} {
		both(t, ours, dyn, "POST", "/register", body, nil)
	}
	for _, body := range []any{
		obj{"instance_id": 99, "model_name": "llama"},
		obj{"instance_id": 1, "model_name": "mistral"},
		obj{"instance_id": 2, "model_name": "llama", "routing_group": "default", "dp_rank": 5},
		obj{"instance_id": 2, "model_name": "llama", "routing_group": "default", "dp_rank": 1},
		obj{"instance_id": 3, "model_name": "llama"},
	} {
		both(t, ours, dyn, "POST", "/unregister", body, nil)
	}
	// Dynamo drops an unregistered worker's blocks asynchronously: wait
	// until both answer the queries alike (or fail after the cap), then
	// compare them.
	settled := []obj{{"token_ids": shared, "model_name": "llama"}, {"token_ids": shared, "model_name": "llama", "routing_group": "acme"}}
	eventually(t, "Dynamo's block drops", func() bool {
		for _, q := range settled {
			var rawA, rawB json.RawMessage
			codeA, codeB := call(t, ours, "POST", "/query", q, &rawA), call(t, dyn, "POST", "/query", q, &rawB)
			if codeA != codeB || jsonText(t, jsonOrText(rawA)) != jsonText(t, jsonOrText(rawB)) {
				return false
			}
		}
		return true
	})
	both(t, ours, dyn, "GET", "/workers", nil, workersShape)
	for _, q := range settled {
		both(t, ours, dyn, "POST", "/query", q, nil)
	}
}

// getTextQuiet is getText for polling before a server listens.
func getTextQuiet(url string) (int, string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, ""
}
