package main

import "github.com/kvhash/kvhash/router/serve"

// newIngest builds the ZeroMQ ingest layer (router/ingest) for the server.
var newIngest serve.NewIngestFunc
