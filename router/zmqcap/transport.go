package zmqcap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"

	"github.com/kvhash/kvhash/router/internal/cpugate"
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

// Cap is one cap on the messages of the sockets that dial or bind its
// endpoints, and who hears of the connections it drops. Its transports
// stay registered with zmq4 for the life of the process (zmq4 cannot
// unregister one): make one Cap per long-lived owner, not one per socket.
type Cap struct {
	max    int64
	id     uint64
	onDrop atomic.Pointer[func(*TooLargeError)]

	mu      sync.Mutex
	schemes map[string]string // endpoint scheme -> the registered transport's name
}

var lastCapID atomic.Uint64

// New returns a Cap of max bytes a message (see FrameOverhead; MinLimit
// to MaxLimit). onDrop, if not nil, is called with each connection
// dropped, from the goroutine that read it: it must not block.
func New(max int64, onDrop func(*TooLargeError)) (*Cap, error) {
	if max < MinLimit || max > MaxLimit {
		return nil, fmt.Errorf("zmqcap: a cap of %d bytes is outside %d..%d", max, MinLimit, int64(MaxLimit))
	}
	c := &Cap{max: max, id: lastCapID.Add(1), schemes: map[string]string{}}
	if onDrop != nil {
		c.onDrop.Store(&onDrop)
	}
	return c, nil
}

// Close stops the calls to onDrop (the sockets stay capped).
func (c *Cap) Close() { c.onDrop.Store(nil) }

func (c *Cap) dropped(e *TooLargeError) {
	if f := c.onDrop.Load(); f != nil {
		(*f)(e)
	}
}

// Endpoint returns ep with its scheme replaced by that of a transport
// capped by c, registered with zmq4 on first use: dial or bind the result
// instead of ep. An endpoint of another scheme (inproc, or one zmq4
// rejects anyway) is returned as is.
func (c *Cap) Endpoint(ep string) (string, error) {
	scheme, addr, ok := strings.Cut(ep, "://")
	network, known := networks[scheme]
	if !ok || !known {
		return ep, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name, done := c.schemes[scheme]
	if !done {
		name = scheme + "-zmqcap" + strconv.FormatUint(c.id, 10)
		if err := zmq4.RegisterTransport(name, cappedTransport{inner: transport.New(network), cap: c}); err != nil {
			return "", fmt.Errorf("zmqcap: registering transport %s: %w", name, err)
		}
		c.schemes[scheme] = name
	}
	return name + "://" + addr, nil
}

// cappedTransport is a net transport whose connections are guarded.
type cappedTransport struct {
	inner transport.Transport
	cap   *Cap
}

func (t cappedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.inner.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newConn(c, t.cap, cpugate.LinkFrom(ctx)), nil
}

// Listen: the connections accepted feed the socket's one consumer, the
// Link of ctx if any (see Dial).
func (t cappedTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	l, err := t.inner.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return listener{Listener: l, cap: t.cap, link: cpugate.LinkFrom(ctx)}, nil
}

func (t cappedTransport) Addr(ep string) (string, error) { return t.inner.Addr(ep) }

type listener struct {
	net.Listener
	cap  *Cap
	link *cpugate.Link
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newConn(c, l.cap, l.link), nil
}

// readBuffer is each connection's read buffer. zmq4 reads a frame's
// header (2 or 9 bytes) and then its body with a read each, unbuffered:
// about seven read system calls for one of vLLM's three-frame messages,
// 19 % of kvrouter's CPU in a 32-engine burst (pprof). Buffered, the
// headers and small bodies come out of one read of what the kernel
// holds; a body at least this long is read straight into zmq4's slice
// (bufio.Reader bypasses an empty buffer for long reads). A variable for
// the benchmark's baseline: 0 reads the connection unbuffered.
var readBuffer = 32 << 10

// conn passes every byte read through its guard. zmq4 reads a
// connection from one goroutine at a time (its handshake, then its
// reader), so only Close may run beside Read.
type conn struct {
	net.Conn
	r     io.Reader       // Conn through a buffer of readBuffer bytes (and gated)
	gated *cpugate.Reader // nil: the socket's context carried no Link
	cap   *Cap
	g     *guard
	err   error // the guard's verdict, kept: the stream cannot be followed after it

	// watchdog closes the connection at handshakeTimeout unless zmq4 has
	// read on past the peer's handshake by then; handshaken is set when
	// the guard has seen the handshake end.
	watchdog   *time.Timer
	handshaken bool
	released   bool // the watchdog was stopped by a read past the handshake
}

// newConn guards c; with a Link, the socket's reader holds one of its
// gate's tokens from each read of c that returned bytes until the next
// (cpugate): the buffer makes that one read of the kernel's a batch, not
// one a frame.
func newConn(c net.Conn, cp *Cap, link *cpugate.Link) *conn {
	cc := &conn{Conn: c, r: c, cap: cp, g: newGuard(cp.max)}
	if link != nil {
		cc.gated = link.NewReader(c)
		cc.r = cc.gated
	}
	if readBuffer > 0 {
		cc.r = bufio.NewReaderSize(cc.r, readBuffer)
	}
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
	n, err := c.r.Read(p)
	if n > 0 {
		if tl := c.g.scan(p[:n]); tl != nil {
			tl.Peer, tl.Local = peerName(c.Conn), localName(c.Conn)
			c.err = tl
			_ = c.Close()
			c.cap.dropped(tl)
			return 0, tl
		}
	}
	return n, err
}

// Close closes the connection, stops its watchdog and gives back a
// gate's token its reader holds.
func (c *conn) Close() error {
	c.watchdog.Stop()
	if c.gated != nil {
		c.gated.Close()
	}
	return c.Conn.Close()
}

func peerName(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	return "a peer on " + localName(c) // a unix socket's peer has no address
}

func localName(c net.Conn) string {
	if a := c.LocalAddr(); a != nil {
		return a.String()
	}
	return "unknown"
}
