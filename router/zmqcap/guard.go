// Package zmqcap caps the size of what a ZeroMQ peer may send, before
// github.com/go-zeromq/zmq4 reads it.
//
// zmq4 (v0.17.0) allocates each incoming frame's body at the size its
// header declares, before a byte of the body has arrived: one frame
// header declaring 2^40 bytes kills the process (fatal error: out of
// memory, which no recover catches), and zmq4 has no option to bound it.
// zmqcap bounds it from outside: it registers zmq4 transports that wrap
// each TCP or IPC connection in a reader that follows the ZMTP 3 framing
// of the inbound bytes and fails the read of a frame header that would
// take its message over the cap, before zmq4 learns the size. zmq4 then
// drops that connection alone; its socket goes on serving the others.
//
// A socket is capped by dialling or binding Cap.Endpoint(ep) instead of
// ep. Each dropped connection is reported to the Cap's owner as a
// *TooLargeError naming the peer; the read that hit the cap returns it
// too (so, after the handshake, does the socket's Recv).
package zmqcap

import (
	"encoding/binary"
	"fmt"
)

// ZMTP 3.x framing (rfc.zeromq.org/spec/23 and /37): a 64-byte greeting,
// then frames, each a flags byte, a size (1 byte, or 8 bytes big-endian
// when the LONG flag is set) and the body. With the NULL mechanism (the
// only one kvhash uses) every byte after the greeting is framed this way,
// commands included.
const (
	greetingLen = 64
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

// FrameOverhead is what each frame counts beyond its body toward the cap:
// zmq4 keeps a message as a slice of frame slices, so a stream of empty
// frames, two bytes each on the wire, would otherwise grow the receiver's
// memory a dozen times faster than the sender pays for it.
const FrameOverhead = 64

// MaxLimit is the largest cap accepted: sums of two sizes under it never
// overflow a uint64.
const MaxLimit = 1 << 62

// TooLargeError is the read of a frame header that takes its message over
// the cap. It is a net.Error that is not a timeout, so zmq4 marks the
// connection closed and removes it from its socket.
type TooLargeError struct {
	Peer    string // the remote address of the connection
	Local   string // its local address (the bound endpoint's, or the dialling socket's)
	Frame   uint64 // the frame's declared body size
	Message uint64 // the message's counted size with this frame (bodies + FrameOverhead a frame)
	Max     int64  // the cap
	Command bool   // the frame is a ZMTP command (the handshake's READY, a SUBSCRIBE, ...)
}

func (e *TooLargeError) Error() string {
	what := "message"
	if e.Command {
		what = "command"
	}
	return fmt.Sprintf("zmqcap: peer %s (to %s) sent a %s frame declaring %d bytes, its %s counting %d bytes, over the cap of %d: connection dropped",
		e.Peer, e.Local, what, e.Frame, what, e.Message, e.Max)
}

// Timeout reports false: the connection is over, not late.
func (e *TooLargeError) Timeout() bool { return false }

// Temporary reports false (net.Error's deprecated method, still in the interface).
func (e *TooLargeError) Temporary() bool { return false }

// guard follows the inbound ZMTP framing of one connection and rejects
// the frame header that takes a message over max. It sees every byte, in
// whatever chunks they are read, once.
type guard struct {
	max int64

	greeting int // greeting bytes still to pass
	state    guardState
	flags    byte
	size     [8]byte // the size bytes of a header being read
	have     int     // how many of them have been read
	body     uint64  // body bytes of the current frame still to pass
	message  uint64  // the current message's counted size, frames before this one
	// handshake is called once, when the peer's first command (its READY,
	// the end of the NULL handshake) has been read whole; nil: never.
	handshake func()
}

type guardState uint8

const (
	atFlags guardState = iota // the next byte is a frame's flags
	atSize                    // reading the size bytes
	inBody                    // passing a body
)

func newGuard(max int64) *guard {
	return &guard{max: max, greeting: greetingLen}
}

// scan follows p, the next bytes read from the peer, and returns the
// frame over the cap (its Peer and Local left for the caller to fill);
// once scan has failed, the connection must not be read again.
func (g *guard) scan(p []byte) *TooLargeError {
	for len(p) > 0 {
		if g.greeting > 0 {
			n := min(g.greeting, len(p))
			g.greeting -= n
			p = p[n:]
			continue
		}
		switch g.state {
		case atFlags:
			g.flags, g.have = p[0], 0
			p = p[1:]
			g.state = atSize
		case atSize:
			want := 1
			if g.flags&flagLong != 0 {
				want = 8
			}
			n := copy(g.size[g.have:want], p)
			g.have += n
			p = p[n:]
			if g.have < want {
				continue
			}
			size := uint64(g.size[0])
			if want == 8 {
				size = binary.BigEndian.Uint64(g.size[:])
			}
			if err := g.admit(size); err != nil {
				return err
			}
			g.body = size
			g.state = inBody
			if size == 0 {
				g.endFrame()
			}
		case inBody:
			n := uint64(len(p))
			if n > g.body {
				n = g.body
			}
			g.body -= n
			p = p[n:]
			if g.body == 0 {
				g.endFrame()
			}
		}
	}
	return nil
}

// admit counts a frame of size body bytes toward its message, or rejects it.
func (g *guard) admit(size uint64) *TooLargeError {
	limit := uint64(g.max)
	total := g.message + FrameOverhead // <= limit < 2^62: no overflow
	if size <= limit {
		total += size
	} else {
		total = size // over the cap whatever came before
	}
	if total > limit {
		return &TooLargeError{Frame: size, Message: total, Max: g.max, Command: g.flags&flagCommand != 0}
	}
	g.message = total
	return nil
}

// endFrame closes the current frame, and its message unless more frames follow.
func (g *guard) endFrame() {
	g.state = atFlags
	if g.flags&flagMore != 0 {
		return
	}
	g.message = 0
	if g.flags&flagCommand != 0 && g.handshake != nil {
		g.handshake()
		g.handshake = nil
	}
}
