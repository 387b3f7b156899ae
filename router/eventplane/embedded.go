package eventplane

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedMaxPayload is the embedded server's largest message.
const EmbeddedMaxPayload = 16 << 20

// Embedded is an in-process NATS server with JetStream: `kvrouter --nats
// embedded` for one machine, and the tests' real server.
type Embedded struct {
	srv      *server.Server
	storeDir string
	port     int
}

// StartEmbedded starts a NATS server with JetStream on 127.0.0.1:port
// (0: a free port) keeping its streams in storeDir. Starting it again on
// the same port and directory brings the streams back (tests cut replicas
// off this way).
func StartEmbedded(storeDir string, port int) (*Embedded, error) {
	return startEmbedded(storeDir, port, EmbeddedMaxPayload)
}

func startEmbedded(storeDir string, port int, maxPayload int32) (*Embedded, error) {
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("eventplane: embedded nats: a free port: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "kvrouter-embedded-" + strconv.Itoa(port),
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		// Engine batches of long prompts exceed NATS's 1 MB default (a
		// 128k-token prompt's token ids alone are 512 KB).
		MaxPayload: maxPayload,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("eventplane: embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("eventplane: embedded nats on port %d did not start within 10 s", port)
	}
	return &Embedded{srv: srv, storeDir: storeDir, port: port}, nil
}

// URL is the client URL (nats://127.0.0.1:port).
func (e *Embedded) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(e.port) }

// Port is the client port.
func (e *Embedded) Port() int { return e.port }

// StoreDir is where JetStream keeps its data.
func (e *Embedded) StoreDir() string { return e.storeDir }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
