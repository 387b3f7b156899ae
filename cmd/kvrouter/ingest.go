package main

import (
	"log/slog"

	"github.com/kvhash/kvhash/router/config"
	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/serve"
)

// newIngest builds the ZeroMQ ingest layer (router/ingest) over the
// indexer, its messages capped at cfg.ZMQMaxMessageBytes.
func newIngest(cfg config.Config) serve.NewIngestFunc {
	return func(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
		return ingest.New(ingest.Options{Handler: h, Logger: log, MaxMessageBytes: cfg.ZMQMaxMessageBytes,
			Workers: cfg.IngestWorkers})
	}
}

// The Subscriber is the server's ingest layer, bound endpoint included.
var (
	_ serve.Ingest = (*ingest.Subscriber)(nil)
	_ serve.Binder = (*ingest.Subscriber)(nil)
)
