package kvmock

import (
	"io"
	"log"
)

// discardLogger silences go-zeromq's own logger: it prints every dropped
// peer, which a subscriber coming and going makes routine. kvmock logs what
// matters through slog.
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
