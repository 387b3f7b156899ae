package serve

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/ingest/ingesttest"
)

// Issue 24 item 4 over ZeroMQ: real sockets on loopback, vLLM's wire
// (ingesttest's payloads) from a Go PUB socket.

// newZMQTestServer is newTestServer with router/ingest's subscriber.
func newZMQTestServer(t *testing.T, cfg config.Config) *testServer {
	t.Helper()
	srv, err := New(Options{Config: cfg, NewIngest: func(h ingest.Handler, log *slog.Logger) (Ingest, error) {
		return ingest.New(ingest.Options{Handler: h, Logger: log, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	ts := newHTTPTest(t, srv)
	t.Cleanup(func() { _ = srv.Shutdown(t.Context()) })
	return &testServer{t: t, srv: srv, ts: ts}
}

// payload is one vLLM batch of one 2-block store (at the test block size)
// naming dpRank; seed makes its blocks distinct.
func payload(dpRank uint32, seed uint64) []byte {
	spec := ingesttest.DefaultSpec(ingesttest.MapEvents)
	spec.Events, spec.BlocksPerEvent, spec.BlockSize, spec.DPRank, spec.Seed = 1, 2, testBlockSize, dpRank, seed
	return ingesttest.NewGenerator(spec).Next()
}

type rankList struct {
	Workers []struct {
		WorkerID uint64 `json:"worker_id"`
		Topic    string `json:"topic"`
		Ranks    []struct {
			DPRank uint32 `json:"dp_rank"`
			Blocks uint64 `json:"blocks"`
		} `json:"ranks"`
	} `json:"workers"`
}

func (s *testServer) workers() rankList {
	var out rankList
	s.must(200, "GET", "/v1/workers", "", &out)
	return out
}

// An engine stream naming a dp_rank beyond its worker's: the first one
// beyond is taken as the rank the engine numbers fleet-wide (one per
// stream, dp_size in all); the others are refused, counted, and create
// nothing. The subscriber goes on: the next batch of rank 0 applies.
func TestStreamNamingRanksTheWorkerLacks(t *testing.T) {
	s := newZMQTestServer(t, testConfig())
	pub := ingesttest.NewPublisher(t)
	ep := pub.Listen("tcp://127.0.0.1:0")
	s.must(201, "POST", "/v1/workers", fmt.Sprintf(`{"worker_id":1,"model":"m","endpoint":"%s"}`, ep), nil)
	pub.WaitSubscribed()
	for seq, rank := range []uint32{0, 2000, 2001, 2002, 0} {
		pub.Send("", uint64(seq), payload(rank, uint64(seq+1)))
	}
	require.Eventually(t, func() bool {
		w := s.workers()
		return len(w.Workers) == 1 && len(w.Workers[0].Ranks) > 0 && w.Workers[0].Ranks[0].Blocks == 4
	}, 10*time.Second, 10*time.Millisecond, "rank 0's second batch applied")
	w := s.workers().Workers[0]
	var ranks []uint32
	for _, r := range w.Ranks {
		ranks = append(ranks, r.DPRank)
	}
	assert.Equal(t, []uint32{0, 2000}, ranks)
	assert.Equal(t, "2", s.metricValue(`kvrouter_refused_events_total{reason="dp_rank_out_of_range"}`))
	assert.Equal(t, "1", s.metricValue(`kvrouter_ingest_connects_total`), "the stream was never dropped")
}

// One publisher on --bind sending 501 topics registered 501 workers; now
// at most --bind-max-workers, only --bind-topics' when set, none beyond
// registered workers' at 0, none with a model that is not a label.
func TestBoundEndpointBoundsTheWorkersItRegisters(t *testing.T) {
	const topics = 501
	topic := func(i int) string { return fmt.Sprintf("kv@10.0.%d.%d:8000@m", i/256, i%256) }
	cases := []struct {
		name       string
		maxWorkers int
		allow      []string
		register   string // a worker registered before, by POST /v1/workers
		extraTopic string // sent besides the 501
		want       int    // workers in the end
		refused    string // the refusal counted
	}{
		{"a bound", 5, nil, "", "", 5, "max_workers"},
		{"an allowlist", 1000, []string{topic(7), "kv@10.0.1.*"}, "", "", 1 + (topics - 256), "not_allowed"},
		{"registered workers only", 0, nil, `{"worker_id":42,"model":"m","topic":"` + topic(9) + `"}`, "", 1, "max_workers"},
		{"a model that is not a label", 1000, []string{"kv@10.9.*"}, "", "kv@10.9.9.9:8000@" + strings.Repeat("m", 300), 0, "invalid_label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Bind, cfg.BindMaxWorkers, cfg.BindTopics = "tcp://127.0.0.1:0", tc.maxWorkers, tc.allow
			s := newZMQTestServer(t, cfg)
			if tc.register != "" {
				s.must(201, "POST", "/v1/workers", tc.register, nil)
			}
			pub := ingesttest.NewPublisher(t)
			pub.Dial("tcp://" + s.srv.BoundAddr().String())
			pub.WaitSubscribed()
			round := func(seq uint64) {
				for i := range topics {
					pub.Send(topic(i), seq, payload(0, uint64(i+1)))
				}
				if tc.extraTopic != "" {
					pub.Send(tc.extraTopic, seq, payload(0, 9999))
				}
			}
			seq := uint64(0)
			require.Eventually(t, func() bool {
				round(seq)
				seq++
				n, _ := s.metricNumber(`kvrouter_bind_refused_messages_total{reason="` + tc.refused + `"}`)
				return len(s.workers().Workers) == tc.want && n > 0
			}, 20*time.Second, 50*time.Millisecond)
			round(seq) // one more round: nothing more is registered
			time.Sleep(100 * time.Millisecond)
			ws := s.workers().Workers
			assert.Len(t, ws, tc.want)
			for _, w := range ws {
				assert.LessOrEqual(t, len(w.Topic), 64)
			}
			if tc.register != "" {
				require.Eventually(t, func() bool {
					ws := s.workers().Workers
					return len(ws) == 1 && ws[0].WorkerID == 42 && len(ws[0].Ranks) == 1 && ws[0].Ranks[0].Blocks == 2
				}, 10*time.Second, 10*time.Millisecond, "the registered worker's topic is applied")
			}
		})
	}
}

// metricNumber is metricValue parsed; false when the series is absent.
func (s *testServer) metricNumber(series string) (float64, bool) {
	v := s.metricValue(series)
	if v == "" {
		return 0, false
	}
	var f float64
	_, err := fmt.Sscan(v, &f)
	require.NoError(s.t, err)
	return f, true
}
