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
	// Port 0: the server binds a free port itself. Picking one with a
	// throwaway listener raced other processes for it (a loaded CI machine
	// running packages in parallel): the server then never came up.
	listenPort, name := port, "kvrouter-embedded-"+strconv.Itoa(port)
	if port == 0 {
		listenPort, name = server.RANDOM_PORT, "kvrouter-embedded-"+newInstance()
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: name,
		Host:       "127.0.0.1",
		Port:       listenPort,
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
	// Generous: the wait ends as soon as the server listens, and a loaded
	// machine may take seconds to start JetStream.
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("eventplane: embedded nats on port %d did not start within 30 s", port)
	}
	if port == 0 {
		addr, ok := srv.Addr().(*net.TCPAddr)
		if !ok {
			srv.Shutdown()
			return nil, fmt.Errorf("eventplane: embedded nats: no TCP address (%v)", srv.Addr())
		}
		port = addr.Port
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
