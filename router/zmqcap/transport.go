package zmqcap

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// MinLimit is the smallest cap accepted: the peer's handshake (its READY
// command and metadata) must always fit.
const MinLimit = 4096

// handshakeTimeout bounds a connection's greeting and handshake, and
// what follows a handshake that zmq4 rejected. zmq4 performs each
// handshake before it accepts the next connection, so a peer that
// connects and says nothing would keep every other engine off a bound
// socket; and it does not close a connection whose handshake failed, so
// peers could pile up open descriptors. Past it, a connection whose
// handshake has not been read, or that zmq4 has not read since, is
// closed. (A variable for the tests.)
var handshakeTimeout = 10 * time.Second

// networks are the zmq4 transports that carry bytes from other processes,
// by the endpoint scheme, with their net network. inproc stays within the
// process and is left alone.
var networks = map[string]string{"tcp": "tcp", "ipc": "unix"}

// Endpoint returns ep with its scheme replaced by that of a transport
// capped at max bytes a message (see FrameOverhead), registered with zmq4
// on first use: dial or bind the result instead of ep. An endpoint of
// another scheme (inproc, or one zmq4 rejects anyway) is returned as is.
func Endpoint(ep string, max int64) (string, error) {
	if max < MinLimit || max > MaxLimit {
		return "", fmt.Errorf("zmqcap: a cap of %d bytes is outside %d..%d", max, MinLimit, int64(MaxLimit))
	}
	scheme, addr, ok := strings.Cut(ep, "://")
	network, known := networks[scheme]
	if !ok || !known {
		return ep, nil
	}
	name := scheme + "-max" + strconv.FormatInt(max, 10)
	if err := register(name, cappedTransport{inner: transport.New(network), max: max}); err != nil {
		return "", err
	}
	return name + "://" + addr, nil
}

var (
	registeredMu sync.Mutex
	registered   = map[string]bool{}
)

// register adds a transport to zmq4's registry once (the registry is
// process-wide and rejects a name twice; one name per scheme and cap).
func register(name string, t cappedTransport) error {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	if registered[name] {
		return nil
	}
	if err := zmq4.RegisterTransport(name, t); err != nil {
		return fmt.Errorf("zmqcap: registering transport %s: %w", name, err)
	}
	registered[name] = true
	return nil
}

// cappedTransport is a net transport whose connections are guarded.
type cappedTransport struct {
	inner transport.Transport
	max   int64
}

func (t cappedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.inner.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newConn(c, t.max), nil
}

func (t cappedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.inner.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return listener{Listener: l, max: t.max}, nil
}

func (t cappedTransport) Addr(ep string) (string, error) { return t.inner.Addr(ep) }

type listener struct {
	net.Listener
	max int64
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newConn(c, l.max), nil
}

// conn passes every byte read through its guard. zmq4 reads a
// connection from one goroutine at a time (its handshake, then its
// reader), so only Close may run beside Read.
type conn struct {
	net.Conn
	g    *guard
	peer string
	err  error // the guard's verdict, kept: the stream cannot be followed after it

	// watchdog closes the connection at handshakeTimeout unless zmq4 has
	// read on past the peer's handshake by then; handshaken is set when
	// the guard has seen the handshake end.
	watchdog   *time.Timer
	handshaken bool
	released   bool // the watchdog was stopped by a read past the handshake
}

func newConn(c net.Conn, max int64) *conn {
	cc := &conn{Conn: c, g: newGuard(max), peer: peerName(c)}
	cc.g.handshake = func() { cc.handshaken = true }
	cc.watchdog = time.AfterFunc(handshakeTimeout, func() { _ = c.Close() })
	return cc
}

// Read reads from the connection and fails, closing it, when the bytes
// read hold a frame header over the cap; they are not passed on.
func (c *conn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.handshaken && !c.released {
		// A read past the handshake: zmq4 took the connection.
		c.watchdog.Stop()
		c.released = true
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if gerr := c.g.scan(p[:n], c.peer); gerr != nil {
			c.err = gerr
			_ = c.Conn.Close()
			return 0, gerr
		}
	}
	return n, err
}

// Close closes the connection and stops its watchdog.
func (c *conn) Close() error {
	c.watchdog.Stop()
	return c.Conn.Close()
}

func peerName(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	if a := c.LocalAddr(); a != nil {
		return "a peer on " + a.String() // a unix socket's peer has no address
	}
	return "unknown"
}
