package serve

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/config"
)

func TestSnapshotRoundTripThroughARestart(t *testing.T) {
	cfg := testConfig()
	cfg.Snapshot.Path = filepath.Join(t.TempDir(), "kvrouter.snap")
	prompt := seqTokens(7, 24)

	first, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, first.Start())
	a := &testServer{t: t, srv: first, ts: newHTTPTest(t, first)}
	a.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	a.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	a.must(200, "POST", "/v1/events?worker_id=2", storedEvent(t, 1, 0, nil, prompt, 500, core.Options{}), nil)
	require.NoError(t, first.Shutdown(t.Context()))
	require.FileExists(t, cfg.Snapshot.Path)

	second, err := New(Options{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, second.Start())
	t.Cleanup(func() { _ = second.Shutdown(t.Context()) })
	b := &testServer{t: t, srv: second, ts: newHTTPTest(t, second)}
	var ans routeAnswer
	b.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`}`, &ans)
	assert.Equal(t, "2", ans.WorkerID.String(), "the restarted router still knows worker 2's blocks")
	assert.Equal(t, "6", ans.OverlapBlocks.String())
	require.Len(t, ans.Candidates, 2, "both workers were restored")
	// The restored worker takes events that chain onto its restored blocks.
	parent := uint64(505)
	b.must(200, "POST", "/v1/events?worker_id=2", storedEvent(t, 2, 0, &parent, seqTokens(31, 4), 900, core.Options{}), nil)
	var out struct {
		Workers []struct {
			Ranks []struct {
				Blocks     int               `json:"blocks"`
				Violations map[string]uint64 `json:"violations"`
			} `json:"ranks"`
		} `json:"workers"`
	}
	b.must(200, "GET", "/v1/workers", "", &out)
	require.Len(t, out.Workers, 2)
	assert.Equal(t, 7, out.Workers[1].Ranks[0].Blocks)
	assert.Zero(t, out.Workers[1].Ranks[0].Violations["parent_not_found"])
}

// A snapshot kvrouter cannot read (corrupt, truncated, or written at
// another block size) stops the start and is left as it was: starting
// empty would overwrite the registry at the next write. Told to discard
// it, kvrouter sets it aside (renamed, intact) and starts empty.
func TestUnreadableSnapshotRefusesToStart(t *testing.T) {
	good := func(t *testing.T, path string, blockSize int) []byte {
		cfg := testConfig()
		cfg.BlockSize, cfg.Snapshot.Path = blockSize, path
		src, err := New(Options{Config: cfg})
		require.NoError(t, err)
		require.NoError(t, src.Start())
		s := &testServer{t: t, srv: src, ts: newHTTPTest(t, src)}
		s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
		require.NoError(t, src.Shutdown(t.Context()))
		full, err := os.ReadFile(path)
		require.NoError(t, err)
		return full
	}
	for _, name := range []string{"garbage", "truncated", "another block size"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Snapshot.Path = filepath.Join(t.TempDir(), "kvrouter.snap")
			var content []byte
			switch name {
			case "garbage":
				content = []byte("not a snapshot at all")
			case "truncated":
				full := good(t, cfg.Snapshot.Path, testBlockSize)
				content = full[:len(full)-7]
			case "another block size":
				content = good(t, cfg.Snapshot.Path, 2*testBlockSize)
			}
			require.NoError(t, os.WriteFile(cfg.Snapshot.Path, content, 0o600))

			srv, err := New(Options{Config: cfg})
			require.NoError(t, err)
			err = srv.Start()
			require.ErrorIs(t, err, ErrStart)
			assert.Contains(t, err.Error(), "--snapshot-discard-unreadable")
			kept, rerr := os.ReadFile(cfg.Snapshot.Path)
			require.NoError(t, rerr)
			assert.Equal(t, content, kept, "the file is left as it was")

			cfg.Snapshot.DiscardUnreadable = true
			var logs bytes.Buffer
			srv, err = New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			require.NoError(t, srv.Start())
			s := &testServer{t: t, srv: srv, ts: newHTTPTest(t, srv)}
			var out struct {
				Workers []any `json:"workers"`
			}
			s.must(200, "GET", "/v1/workers", "", &out)
			assert.Empty(t, out.Workers, "the router starts empty")
			assert.Contains(t, logs.String(), "set aside")
			aside, err := filepath.Glob(cfg.Snapshot.Path + ".unreadable-*")
			require.NoError(t, err)
			require.Len(t, aside, 1)
			kept, err = os.ReadFile(aside[0])
			require.NoError(t, err)
			assert.Equal(t, content, kept, "set aside intact")
			s.must(201, "POST", "/v1/workers", `{"worker_id":3,"model":"m"}`, nil)
			require.NoError(t, srv.Shutdown(t.Context()))
			cfg.Snapshot.DiscardUnreadable = false
			again, err := New(Options{Config: cfg})
			require.NoError(t, err)
			require.NoError(t, again.Start(), "the new snapshot is good")
			defer func() { _ = again.Shutdown(t.Context()) }()
			_, ok := again.Indexer().Worker(3)
			assert.True(t, ok)
		})
	}
}

// What the config asks and cannot be served stops the start: a snapshot
// path kvrouter cannot write, a worker it cannot register.
func TestStartRefusesWhatItCannotServe(t *testing.T) {
	unwritable := testConfig()
	unwritable.Snapshot.Path = "/proc/kvrouter-cannot-write-here/kvrouter.snap"
	badWorker := testConfig()
	badWorker.Workers = []config.Worker{{WorkerID: 1, Model: "m", Endpoint: "tcp://127.0.0.1:1", EngineHash: "nonsense-scheme"}}
	for name, cfg := range map[string]config.Config{"unwritable snapshot": unwritable, "worker it cannot register": badWorker} {
		t.Run(name, func(t *testing.T) {
			srv, err := New(Options{Config: cfg})
			require.NoError(t, err)
			err = srv.Start()
			require.ErrorIs(t, err, ErrStart)
		})
	}
}

func TestEnforceModeQuarantinesAnUnstableWorker(t *testing.T) {
	cfg := testConfig()
	cfg.Index.StabilityMode = "enforce"
	s := newTestServer(t, cfg)
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	s.must(201, "POST", "/v1/workers", `{"worker_id":2,"model":"m"}`, nil)
	prompt := seqTokens(1, 16)
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 1, 0, nil, prompt, 100, core.Options{}), nil)
	// The same content under other engine ids: the engine's hashes are not
	// a function of the content (a random PYTHONHASHSEED).
	var res struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	s.must(200, "POST", "/v1/events?worker_id=1", storedEvent(t, 2, 0, nil, prompt, 700, core.Options{}), &res)
	require.NotEmpty(t, res.Errors)
	assert.Contains(t, res.Errors[0].Message, "hash_mismatch")

	var out struct {
		Workers []struct {
			Ranks []struct {
				State       string `json:"state"`
				Reason      string `json:"reason"`
				Blocks      int    `json:"blocks"`
				Quarantines int    `json:"quarantines"`
			} `json:"ranks"`
		} `json:"workers"`
	}
	s.must(200, "GET", "/v1/workers", "", &out)
	r := out.Workers[0].Ranks[0]
	assert.Equal(t, "quarantined", r.State)
	assert.Contains(t, r.Reason, "unstable")
	assert.Equal(t, 0, r.Blocks, "its blocks were cleared")
	assert.Equal(t, 1, r.Quarantines)

	// Scored by load only: its cached prefix no longer attracts the prompt.
	var ans routeAnswer
	s.must(200, "POST", "/v1/route", `{"model":"m","token_ids":`+tokensJSON(prompt)+`}`, &ans)
	for _, c := range ans.Candidates {
		assert.Equal(t, "0", c.OverlapBlocks.String())
		if c.WorkerID.String() == "1" {
			assert.Equal(t, "quarantined", c.State)
		}
	}
	_, body := s.do("GET", "/metrics", "")
	assert.Contains(t, string(body), `kvrouter_worker_state{dp_rank="0",model="m",state="quarantined",tenant="",worker_id="1"} 1`)
}

// Routes and event ingestion at once, under -race: every route answers
// 200 with a registered worker, and every event applies.
func TestConcurrentRoutesDuringIngestion(t *testing.T) {
	s := newTestServer(t, testConfig())
	const workers = 4
	for id := 1; id <= workers; id++ {
		s.must(201, "POST", "/v1/workers", fmt.Sprintf(`{"worker_id":%d,"model":"m"}`, id), nil)
	}
	var wg sync.WaitGroup
	for id := 1; id <= workers; id++ {
		wg.Go(func() {
			for i := range 40 {
				ev := storedEvent(t, uint64(i+1), 0, nil, seqTokens(1000*id+16*i, 16), uint64(id)<<32|uint64(i)<<8, core.Options{})
				code, body := s.do("POST", fmt.Sprintf("/v1/events?worker_id=%d", id), ev)
				assert.Equal(t, 200, code, "%s", body)
			}
		})
	}
	for g := range 4 {
		wg.Go(func() {
			for i := range 60 {
				var ans routeAnswer
				code, body := s.do("POST", "/v1/route", fmt.Sprintf(`{"model":"m","token_ids":%s,"request_id":"g%d-%d"}`,
					tokensJSON(seqTokens(1000*(1+i%workers)+16*(i%40), 16)), g, i))
				if !assert.Equal(t, 200, code, "%s", body) {
					continue
				}
				require.NoError(t, jsonUnmarshalNumber(body, &ans))
				assert.Len(t, ans.Candidates, workers)
				s.do("DELETE", "/v1/requests/"+ans.RequestID, "")
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			code, _ := s.do("GET", "/metrics", "")
			assert.Equal(t, 200, code)
			code, _ = s.do("GET", "/dump", "")
			assert.Equal(t, 200, code)
		}
	})
	wg.Wait()
	sizes := s.srv.Indexer().Sizes()
	require.Len(t, sizes, 1)
	assert.Equal(t, uint64(workers*40*4), sizes[0].Pairs, "every event applied")
	assert.Zero(t, s.srv.Router().Stats().ActiveRequests, "every route was freed")
}

func TestSnapshotIsWrittenEveryInterval(t *testing.T) {
	cfg := testConfig()
	cfg.Snapshot.Path = filepath.Join(t.TempDir(), "kvrouter.snap")
	cfg.Snapshot.Interval = 20 * time.Millisecond
	s := newTestServer(t, cfg)
	s.must(201, "POST", "/v1/workers", `{"worker_id":1,"model":"m"}`, nil)
	require.Eventually(t, func() bool {
		_, err := os.Stat(cfg.Snapshot.Path)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "a snapshot before any shutdown")
	require.Eventually(t, func() bool { // counted just after the rename
		_, body := s.do("GET", "/metrics", "")
		return strings.Contains(string(body), `kvrouter_snapshot_writes_total{result="ok"}`)
	}, 10*time.Second, 10*time.Millisecond)
}
