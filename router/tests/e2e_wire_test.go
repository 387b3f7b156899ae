package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
)

// Every wire layout engines send drives the router without adapter code:
// each worker publishes in one layout, and its prompt routes to it.
func TestE2EEveryWireLayoutRoutesToTheWorkerHoldingThePrefix(t *testing.T) {
	layouts := []struct {
		name string
		opts obj // send options
		hash int64
	}{
		{"map events, int hashes, 3-element batch", obj{"layout": "map", "batch_form": "array3"}, 1 << 40},
		{"map events, bytes hashes, 2-element batch", obj{"layout": "map", "bytes_hashes": true, "batch_form": "array2"}, 2 << 40},
		{"array events, int hashes, 2-element batch", obj{"layout": "array", "batch_form": "array2"}, 3 << 40},
		{"array events, bytes hashes, 3-element batch", obj{"layout": "array", "bytes_hashes": true, "batch_form": "array3"}, 4 << 40},
		{"map events, map batch", obj{"layout": "map", "batch_form": "map"}, 5 << 40},
		{"SGLang, negative i64 hashes", obj{"layout": "sglang", "batch_form": "array3"}, -6 << 40},
	}
	eng := startEngines(t)
	r := startRouter(t, testConfig())
	base := enginetest.FreePorts(t, len(layouts))
	for i := range layouts {
		name := fmt.Sprintf("w%d", i+1)
		eng.open(name, enginetest.TCP(base+i), "", nil)
		r.must(201, "POST", "/v1/workers", obj{"worker_id": i + 1, "model": "m", "endpoint": enginetest.TCP(base + i)}, nil)
		eng.waitSub(name)
	}
	for i, l := range layouts {
		// Two batches: the second chains onto the first's last block.
		toks := tokens(1000*(i+1), 24)
		parent := l.hash + 2
		eng.send(fmt.Sprintf("w%d", i+1), []obj{stored(hashes(l.hash, 3), nil, toks[:12], nil)}, l.opts)
		eng.send(fmt.Sprintf("w%d", i+1), []obj{stored(hashes(l.hash+3, 3), &parent, toks[12:], nil)}, l.opts)
	}
	for i, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			r.waitRoute("m", tokens(1000*(i+1), 28), nil, fmt.Sprint(i+1), 6)
		})
	}
	rv := r.rank(1, 0)
	assert.True(t, rv.Connected)
	require.NotNil(t, rv.LastSeq)
	assert.Equal(t, 1, *rv.LastSeq)
	assert.Equal(t, uint64(2), rv.Events["stored"]["applied"])
}

// SGLang's cache_salt: the salt feeds the seed, so only a request with
// the same salt matches; vLLM's LoRA name likewise.
func TestE2ECacheSaltAndLoRA(t *testing.T) {
	eng := startEngines(t)
	r := startRouter(t, testConfig())
	base := enginetest.FreePorts(t, 2)
	eng.open("sgl", enginetest.TCP(base), "", nil)
	eng.open("vllm", enginetest.TCP(base+1), "", nil)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(base)}, nil)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 2, "model": "m", "endpoint": enginetest.TCP(base + 1)}, nil)
	eng.waitSub("sgl")
	eng.waitSub("vllm")
	toks := tokens(50, 16)
	eng.send("sgl", []obj{stored(hashes(-900, 4), nil, toks, obj{"cache_salt": "tenant-a"})}, obj{"layout": "sglang"})
	eng.send("vllm", []obj{stored(hashes(700, 4), nil, toks, obj{"lora_name": "adapter-x"})}, obj{"layout": "map"})

	r.waitRoute("m", toks, obj{"cache_salt": "tenant-a"}, "1", 4)
	r.waitRoute("m", toks, obj{"lora_name": "adapter-x"}, "2", 4)
	d := r.route("m", toks, nil)
	assert.Equal(t, "0", d.OverlapBlocks.String(), "unsalted, no LoRA: nobody holds these blocks")
	d = r.route("m", toks, obj{"cache_salt": "tenant-b"})
	assert.Equal(t, "0", d.OverlapBlocks.String(), "another tenant's salt never matches")
}

// Blocks the router cannot hash faithfully are counted by reason, not
// indexed.
func TestE2ESkippedBlocksAreCountedByReason(t *testing.T) {
	eng, r, _ := startOneWorker(t, testConfig())
	eng.send("e", []obj{
		{"type": "BlockStored", "block_hashes": []int64{1, 2}, "token_ids": tokens(1, 32), "block_size": 16},
		stored(hashes(10, 1), nil, tokens(1, 4), obj{"locality": "REMOTE"}),
		stored(hashes(20, 1), nil, tokens(1, 4), obj{"kv_cache_spec_kind": "sliding_window"}),
		stored(hashes(30, 1), nil, tokens(1, 4), obj{"medium": "CPU"}),
		stored(hashes(40, 2), nil, tokens(1, 8), nil),
	}, obj{"layout": "map"})
	eventually(t, "the batch", func() bool { return r.rank(1, 0).Blocks == 2 })
	rv := r.rank(1, 0)
	assert.Equal(t, uint64(2), rv.Skipped["block_size"])
	assert.Equal(t, uint64(1), rv.Skipped["remote"])
	assert.Equal(t, uint64(1), rv.Skipped["kv_cache_spec_kind"])
	assert.Equal(t, uint64(1), rv.Skipped["medium"])
	assert.Contains(t, r.logs.String(), "block_size")
}

// A data-parallel engine: rank r publishes on port + r; each rank's blocks
// are its own.
func TestE2EDataParallelRanks(t *testing.T) {
	eng := startEngines(t)
	r := startRouter(t, testConfig())
	base := enginetest.FreePorts(t, 2)
	eng.open("r0", enginetest.TCP(base), "", nil)
	eng.open("r1", enginetest.TCP(base+1), "", nil)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 9, "model": "m", "endpoint": enginetest.TCP(base), "dp_size": 2}, nil)
	eng.waitSub("r0")
	eng.waitSub("r1")
	eng.send("r0", []obj{stored(hashes(100, 2), nil, tokens(1, 8), nil)}, obj{"dp_rank": 0})
	eng.send("r1", []obj{stored(hashes(200, 3), nil, tokens(500, 12), nil)}, obj{"batch_form": "array2"})
	var d decision
	eventually(t, "rank 1's blocks", func() bool {
		d = r.route("m", tokens(500, 12), nil)
		return d.OverlapBlocks.String() == "3"
	})
	assert.Equal(t, "9", d.WorkerID.String())
	assert.Equal(t, "1", d.DPRank.String(), "a 2-element batch's rank is its port's")
	eventually(t, "rank 0's blocks", func() bool {
		d = r.route("m", tokens(1, 8), nil)
		return d.OverlapBlocks.String() == "2"
	})
	assert.Equal(t, "0", d.DPRank.String())
}

// A Dynamo-JSON publisher over HTTP (its hashes from Dynamo's own
// compute_block_hash_for_seq) drives the router without adapter code.
func TestE2EDynamoJSONPublisherOverHTTP(t *testing.T) {
	r := startRouter(t, testConfig())
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m"}, nil)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 2, "model": "m"}, nil)
	script := filepath.Join(enginetest.RepoRoot(t), "router", "tests", "testdata", "dynamo_json_publisher.py")
	publish := func(worker, first, n int, lora string) string {
		args := []string{script, r.url, fmt.Sprint(worker), fmt.Sprint(blockSize), fmt.Sprint(first), fmt.Sprint(n)}
		if lora != "" {
			args = append(args, lora)
		}
		cmd := exec.Command(enginetest.VenvPython(t), args...)
		cmd.Env = append(os.Environ(), "KVROUTER_ADMIN_TOKEN="+e2eAdminToken)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	out := publish(2, 300, 24, "")
	assert.Contains(t, out, `"errors":[]`)
	publish(1, 300, 24, "adapter-a")

	d := r.route("m", tokens(300, 24), nil)
	assert.Equal(t, "2", d.WorkerID.String())
	assert.Equal(t, "6", d.OverlapBlocks.String(), "Dynamo's hashes are kvrouter's")
	d = r.route("m", tokens(300, 24), obj{"lora_name": "adapter-a"})
	assert.Equal(t, "1", d.WorkerID.String())
	assert.Equal(t, "6", d.OverlapBlocks.String(), "LoRA seeds agree too")
}

// Routes over HTTP while two engines stream over ZeroMQ, under -race:
// every route answers, and every batch is indexed.
func TestE2EConcurrentRoutesDuringIngestion(t *testing.T) {
	eng := startEngines(t)
	r := startRouter(t, testConfig())
	base := enginetest.FreePorts(t, 2)
	for i := range 2 {
		name := fmt.Sprintf("e%d", i)
		eng.open(name, enginetest.TCP(base+i), "", nil)
		r.must(201, "POST", "/v1/workers", obj{"worker_id": i + 1, "model": "m", "endpoint": enginetest.TCP(base + i)}, nil)
		eng.waitSub(name)
	}
	const batches = 40
	done := make(chan struct{})
	var routes sync.WaitGroup
	for g := range 4 {
		routes.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				var d decision
				code := call(t, r.url, "POST", "/v1/route", obj{"model": "m", "token_ids": tokens(100*(i%batches), 8),
					"request_id": fmt.Sprintf("g%d-%d", g, i)}, &d)
				if !assert.Equal(t, 200, code) {
					return
				}
				call(t, r.url, "DELETE", "/v1/requests/"+d.RequestID, nil, nil)
			}
		})
	}
	for i := range batches {
		for w := range 2 {
			eng.send(fmt.Sprintf("e%d", w), []obj{stored(hashes(int64(w)<<32|int64(i)<<8, 2), nil, tokens(100*i, 8), nil)}, nil)
		}
	}
	eventually(t, "every batch", func() bool {
		return r.rank(1, 0).Blocks == 2*batches && r.rank(2, 0).Blocks == 2*batches
	})
	close(done)
	routes.Wait()
	d := r.route("m", tokens(100*(batches-1), 8), nil)
	assert.Equal(t, "2", d.OverlapBlocks.String())
}
