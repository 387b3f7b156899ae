package indexerbench

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/enginetest"
	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/logtest"
	"github.com/kvhash/kvhash/router/serve"
)

// smokeSpec is a stream small enough for make test: a few thousand
// blocks from three engines, with shared prefixes and removals.
func smokeSpec() Spec { return DefaultSpec(3, 6_000) }

func smokeRun(t *testing.T, target *Target, rate float64) {
	t.Helper()
	st, err := Generate(smokeSpec())
	require.NoError(t, err)
	pubs, err := OpenPublishers(st.Spec.Engines)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pubs.Close() })
	qs := st.PromptQueries()
	floor := httptest.NewServer(FloorHandler())
	t.Cleanup(floor.Close)
	res, err := Run(t.Context(), target, pubs, st, RunConfig{Rate: rate, QueryRate: 50, Queries: qs,
		PollInterval: 5 * time.Millisecond, Timeout: 30 * time.Second, FloorURL: floor.URL})
	require.NoError(t, err)
	assert.Zero(t, res.Wrong, "answers differing from the stream: %s", res.FirstWrong)
	assert.Positive(t, res.BlocksPerSec)
	assert.Zero(t, res.Query.Failed)
	assert.Zero(t, res.Floor.Failed)
}

// The harness's kvrouter path: generator, PUB sockets, kvrouter's ZeroMQ
// ingest and its Dynamo-API /query; every prompt of the stream is then
// answered exactly as the stream implies (every block arrived, every
// removal applied).
func TestKVRouterHoldsTheWholeStream(t *testing.T) {
	for _, rate := range []float64{0, 200_000} {
		t.Run(RateName(rate), func(t *testing.T) {
			cfg := config.Default()
			cfg.BlockSize = smokeSpec().BlockSize
			logs := &logtest.Buffer{}
			srv, err := serve.New(serve.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil)),
				NewIngest: func(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
					return ingest.New(ingest.Options{Handler: h, Logger: log})
				}})
			require.NoError(t, err)
			require.NoError(t, srv.Start())
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(func() {
				ts.Close()
				_ = srv.Shutdown(context.Background())
				if t.Failed() {
					t.Logf("kvrouter logs:\n%s", logs.String())
				}
			})
			smokeRun(t, &Target{Name: "kvrouter", URL: ts.URL}, rate)
		})
	}
}

// The same stream through Dynamo's own indexer (the wheel in the venv)
// gives the same answers: the stream is one Dynamo reads as vLLM's, and
// the expected answers are Dynamo's semantics, not only kvrouter's.
func TestDynamoHoldsTheWholeStream(t *testing.T) {
	target, err := Start(t.Context(), DynamoCommand(enginetest.VenvPython(t), 1), filepath.Join(t.TempDir(), "dynamo.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = target.Stop() })
	smokeRun(t, target, 0)
	rss, err := target.PeakRSS()
	require.NoError(t, err)
	assert.Greater(t, rss, int64(1<<20))
	cpu, err := target.CPUSeconds()
	require.NoError(t, err)
	assert.Positive(t, cpu)
}
