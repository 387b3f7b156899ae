package main

import (
	"log/slog"

	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/serve"
)

// newIngest builds the ZeroMQ ingest layer (router/ingest) over the
// indexer.
func newIngest(h ingest.Handler, log *slog.Logger) (serve.Ingest, error) {
	return ingest.New(ingest.Options{Handler: h, Logger: log})
}

// The Subscriber is the server's ingest layer, bound endpoint included.
var (
	_ serve.Ingest = (*ingest.Subscriber)(nil)
	_ serve.Binder = (*ingest.Subscriber)(nil)
)
