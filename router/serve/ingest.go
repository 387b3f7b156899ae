package serve

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"

	"github.com/kvhash/kvhash/router/ingest"
)

// Ingest is what the server needs from the ingest layer (ZeroMQ SUB
// sockets decoding engines' wire into ingest.Batch for the indexer):
// router/ingest's Subscriber. A server without one serves HTTP publishers
// only (POST /v1/events).
type Ingest interface {
	// Subscribe starts one stream per rank of an engine (rank r at the
	// endpoint's port + r), resuming each from sub.ResumeAfter.
	Subscribe(sub ingest.Subscription) ([]ingest.Source, error)
	// Unsubscribe stops every rank of (model, worker).
	Unsubscribe(model string, workerID uint64) int
	// RequestReplay asks a rank's replay endpoint for the batches from
	// fromSeq on (the indexer's quarantine does).
	RequestReplay(src ingest.Source, fromSeq uint64) error
	// Close stops every subscriber and closes the sockets.
	Close() error
}

// Binder is an Ingest that can also bind one endpoint engines connect to
// (router/ingest's Subscriber does).
type Binder interface {
	Bind(b ingest.Binding) (net.Addr, error)
}

// NewIngestFunc builds the ingest layer over the handler that receives
// the batches (the indexer).
type NewIngestFunc func(h ingest.Handler, log *slog.Logger) (Ingest, error)

// checkEndpoint validates a ZeroMQ endpoint's shape: transport://address,
// a transport ZeroMQ knows.
func checkEndpoint(field, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" && u.Opaque == "" && u.Path == "" {
		return fmt.Errorf("%s %q: want transport://address (tcp://host:5557)", field, endpoint)
	}
	switch u.Scheme {
	case "tcp", "ipc", "inproc":
	default:
		return fmt.Errorf("%s %q: transport %q; want tcp, ipc or inproc", field, endpoint, u.Scheme)
	}
	if u.Scheme == "tcp" {
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return fmt.Errorf("%s %q: %v", field, endpoint, err)
		}
	}
	return nil
}
