package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/internal/enginetest"
)

// A seq gap asks the engine's replay endpoint for the missing batches, in
// both reply shapes; their blocks are indexed as if never lost.
func TestE2EGapIsReplayed(t *testing.T) {
	for _, shape := range []int{4, 3} {
		t.Run(fmt.Sprintf("%d-frame replies", shape), func(t *testing.T) {
			eng := startEngines(t)
			r := startRouter(t, testConfig())
			port := enginetest.FreePorts(t, 2)
			eng.open("e", enginetest.TCP(port), enginetest.TCP(port+1), obj{"replay_shape": shape})
			r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(port), "replay_endpoint": enginetest.TCP(port + 1)}, nil)
			eng.waitSub("e")
			toks := tokens(10, 24)
			p1, p2 := int64(101), int64(103)
			eng.send("e", []obj{stored(hashes(100, 2), nil, toks[:8], nil)}, nil)
			// Seq 0 indexed: the stream's catch-up at connect is behind it,
			// so the next seq's loss is a gap found live.
			r.waitRoute("m", toks[:8], nil, "1", 2)
			eng.send("e", []obj{stored(hashes(102, 2), &p1, toks[8:16], nil)}, obj{"skip": true}) // lost on the way
			eng.send("e", []obj{stored(hashes(104, 2), &p2, toks[16:], nil)}, nil)
			r.waitRoute("m", toks, nil, "1", 6)
			rv := r.rank(1, 0)
			assert.Equal(t, 1, rv.Replayed)
			assert.Equal(t, 0, rv.Gaps)
			assert.Equal(t, "live", rv.State)
		})
	}
}

// Without replay a gap cannot be filled: the worker is degraded (blocks
// cleared, scored by load only) until its new events rebuild it.
func TestE2ELostGapDegradesTheWorker(t *testing.T) {
	cfg := testConfig()
	cfg.Index.DegradedSettle = time.Hour // stays degraded for the test
	eng, r, _ := startOneWorker(t, cfg)
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 2, "model": "m"}, nil)
	toks := tokens(10, 16)
	eng.send("e", []obj{stored(hashes(100, 4), nil, toks, nil)}, nil)
	r.waitRoute("m", toks, nil, "1", 4)
	eng.send("e", []obj{stored(hashes(200, 1), nil, tokens(90, 4), nil)}, obj{"skip": true})
	eng.send("e", []obj{stored(hashes(300, 1), nil, tokens(70, 4), nil)}, nil)
	eventually(t, "the degraded state", func() bool { return r.rank(1, 0).State == "degraded" })
	rv := r.rank(1, 0)
	assert.Equal(t, 1, rv.Gaps)
	assert.LessOrEqual(t, rv.Blocks, 1, "the blocks from before the gap were cleared")
	d := r.route("m", toks, nil)
	assert.Equal(t, "0", d.OverlapBlocks.String(), "a degraded worker's old prefix is not trusted")
}

// A seq back at 0 is a new engine process: its old blocks go.
func TestE2EEngineRestartClearsTheWorker(t *testing.T) {
	eng, r, _ := startOneWorker(t, testConfig())
	old := tokens(10, 16)
	eng.send("e", []obj{stored(hashes(100, 4), nil, old, nil)}, nil)
	eng.send("e", []obj{stored(hashes(104, 1), nil, tokens(500, 4), nil)}, nil)
	r.waitRoute("m", old, nil, "1", 4)
	fresh := tokens(900, 8)
	eng.send("e", []obj{stored(hashes(100, 2), nil, fresh, nil)}, obj{"seq": 0})
	r.waitRoute("m", fresh, nil, "1", 2)
	rv := r.rank(1, 0)
	assert.Equal(t, 1, rv.Restarts)
	assert.Equal(t, 2, rv.Blocks, "only the new process's blocks")
	assert.Equal(t, "0", r.route("m", old, nil).OverlapBlocks.String())
}

// Malformed messages are counted and skipped; the subscriber goes on.
func TestE2EMalformedFramesAreSkipped(t *testing.T) {
	eng, r, _ := startOneWorker(t, testConfig())
	for _, frames := range [][]string{
		{"", "0000000000000000"},                                                 // two frames
		{"", "00000000", "93cb41d000000000000090c0"},                             // a 4-byte seq
		{"", "0000000000000000", "c1"},                                           // not MessagePack
		{"", "0000000000000000", "93cb41d00000000000009181a474797065a3466f6fc0"}, // an unknown event tag
	} {
		eng.Do(obj{"op": "raw", "name": "e", "frames": frames})
	}
	toks := tokens(10, 8)
	eng.send("e", []obj{stored(hashes(100, 2), nil, toks, nil)}, nil)
	r.waitRoute("m", toks, nil, "1", 2)
	eventually(t, "the malformed count", func() bool { return r.rank(1, 0).Malformed >= 3 })
	_, body := getText(t, r.url+"/metrics")
	assert.Contains(t, body, `kvrouter_malformed_messages_total{dp_rank="0",model="m",tenant="",worker_id="1"}`)
	assert.Contains(t, body, `kvrouter_ingest_malformed_total{reason=`, "the wire's own counters, by reason")
}

// In enforce mode a worker whose hashes prove unstable is quarantined and
// asked to replay; it is scored by load only.
func TestE2EEnforceModeQuarantine(t *testing.T) {
	eng := startEngines(t)
	cfg := testConfig()
	cfg.Index.StabilityMode = "enforce"
	cfg.Index.QuarantineSettle = time.Hour
	r := startRouter(t, cfg)
	port := enginetest.FreePorts(t, 2)
	eng.open("e", enginetest.TCP(port), enginetest.TCP(port+1), nil)
	// The test engine's ids are synthetic, not a real scheme's: verifying
	// them against vLLM's schemes is switched off; the violation below is
	// core's own guardrail.
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(port), "replay_endpoint": enginetest.TCP(port + 1),
		"engine_hash": "off"}, nil)
	eng.waitSub("e")
	toks := tokens(10, 8)
	eng.send("e", []obj{stored(hashes(100, 2), nil, toks, nil)}, nil)
	r.waitRoute("m", toks, nil, "1", 2)
	// The same content under new ids: a random hash seed per process.
	eng.send("e", []obj{stored(hashes(555, 2), nil, toks, nil)}, nil)
	eventually(t, "the quarantine", func() bool { return r.rank(1, 0).State == "quarantined" })
	assert.Equal(t, 1, r.rank(1, 0).Quarantines)
	assert.Equal(t, "0", r.route("m", toks, nil).OverlapBlocks.String())
	assert.Contains(t, r.logs.String(), "worker quarantined")
	assert.Contains(t, r.logs.String(), "hash-stability.md")
	eventually(t, "the replay request", func() bool {
		_, body := getText(t, r.url+"/metrics")
		return containsLine(body, "kvrouter_quarantine_replay_requests_total 1")
	})
}

// One bound endpoint that engines connect to; the worker comes from the
// topic.
func TestE2EBoundEndpointResolvesWorkersFromTopics(t *testing.T) {
	eng := startEngines(t)
	port := enginetest.FreePorts(t, 1)
	cfg := testConfig()
	cfg.Bind = enginetest.TCP(port)
	cfg.BindModel = "m"
	r := startRouter(t, cfg)
	eng.open("a", enginetest.TCP(port), "", obj{"bind": false, "topic": "7"})
	eng.open("b", enginetest.TCP(port), "", obj{"bind": false, "topic": "kv@10.0.0.5:8000@m"})
	eng.waitSub("a")
	eng.waitSub("b")
	eng.send("a", []obj{stored(hashes(100, 2), nil, tokens(10, 8), nil)}, nil)
	eng.send("b", []obj{stored(hashes(200, 3), nil, tokens(300, 12), nil)}, nil)
	r.waitRoute("m", tokens(10, 8), nil, "7", 2)
	var d decision
	eventually(t, "the llm-d topic's worker", func() bool {
		d = r.route("m", tokens(300, 12), nil)
		return d.OverlapBlocks.String() == "3"
	})
	assert.NotEqual(t, "7", d.WorkerID.String())
}

// Deleting a worker unsubscribes it and drops its blocks; an engine that
// goes away and comes back is reported, and its new events are indexed.
func TestE2EDeleteAndReconnect(t *testing.T) {
	eng, r, port := startOneWorker(t, testConfig())
	toks := tokens(10, 8)
	eng.send("e", []obj{stored(hashes(100, 2), nil, toks, nil)}, nil)
	r.waitRoute("m", toks, nil, "1", 2)

	// The engine process goes away and a new one binds the same port.
	eng.Do(obj{"op": "close", "name": "e"})
	eng.open("e", enginetest.TCP(port), "", nil)
	eng.waitSub("e")
	fresh := tokens(500, 12)
	eng.send("e", []obj{stored(hashes(900, 3), nil, fresh, nil)}, nil)
	r.waitRoute("m", fresh, nil, "1", 3)
	assert.True(t, r.rank(1, 0).Connected)

	r.must(200, "DELETE", "/v1/workers/1", nil, nil)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	r.must(404, "POST", "/v1/route", obj{"model": "m", "token_ids": fresh}, &e)
	assert.Equal(t, "model_not_found", e.Error.Code, "the model's last worker left with its index")
	// Registered again, it starts from nothing; it joins the stream in the
	// middle (seq 1, not 0), so it is degraded, scored by load only, until
	// its new events have rebuilt it.
	r.must(201, "POST", "/v1/workers", obj{"worker_id": 1, "model": "m", "endpoint": enginetest.TCP(port)}, nil)
	assert.Equal(t, "0", r.route("m", fresh, nil).OverlapBlocks.String())
	// (The publisher's XPUB saw the old subscription leave first, so its
	// wait_sub cannot tell when the new one arrives: send until it lands.)
	eventually(t, "the re-registered stream", func() bool {
		eng.send("e", []obj{stored(hashes(950, 2), nil, tokens(70, 8), nil)}, nil)
		time.Sleep(50 * time.Millisecond)
		return r.rank(1, 0).Blocks == 2
	})
	assert.Equal(t, "degraded", r.rank(1, 0).State)
	assert.Equal(t, "0", r.route("m", tokens(70, 8), nil).OverlapBlocks.String())
}
