// Package zmqcaptest speaks raw ZMTP 3.0 bytes over a TCP connection, as
// a hostile peer would: the tests of zmqcap and of kvrouter's ingest send
// through it exactly the byte sequences of the frame-size attack.
package zmqcaptest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// Greeting is a ZMTP 3.0 greeting with the NULL mechanism: the signature
// (0xFF, eight padding bytes, 0x7F), version 3.0, the mechanism "NULL"
// padded to 20 bytes, as-server 0, 31 bytes of filler. 64 bytes.
func Greeting() []byte {
	g := make([]byte, 0, 64)
	g = append(g, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F)
	g = append(g, 3, 0)
	mech := make([]byte, 20)
	copy(mech, "NULL")
	g = append(g, mech...)
	g = append(g, 0)
	g = append(g, make([]byte, 31)...)
	return g
}

// Ready is the READY command frame declaring socketType (e.g. "PUB"):
// flags 0x04 (command, short), its size, then the name "READY" and the
// one property Socket-Type.
func Ready(socketType string) []byte {
	body := []byte{5}
	body = append(body, "READY"...)
	body = append(body, byte(len("Socket-Type")))
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(socketType)))
	body = append(body, socketType...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

// LongHeader is a long frame's header declaring size body bytes: flags
// 0x02 (long; final unless more, then 0x03) and the size as 8 bytes
// big-endian. The body is not included.
func LongHeader(size uint64, more bool) []byte {
	flags := byte(0x02)
	if more {
		flags |= 0x01
	}
	return binary.BigEndian.AppendUint64([]byte{flags}, size)
}

// Frame is a whole message frame (short or long as its size needs).
func Frame(body []byte, more bool) []byte {
	var out []byte
	if len(body) > 255 {
		out = LongHeader(uint64(len(body)), more)
	} else {
		flags := byte(0)
		if more {
			flags = 0x01
		}
		out = []byte{flags, byte(len(body))}
	}
	return append(out, body...)
}

// Message is the frames of one multi-part message.
func Message(frames ...[]byte) []byte {
	var out []byte
	for i, f := range frames {
		out = append(out, Frame(f, i < len(frames)-1)...)
	}
	return out
}

// Handshake sends the greeting and the READY of a socketType peer on c,
// then reads and discards the other side's greeting (64 bytes), so that
// what is sent next arrives after a completed handshake.
func Handshake(c net.Conn, socketType string) error {
	if _, err := c.Write(append(Greeting(), Ready(socketType)...)); err != nil {
		return fmt.Errorf("zmqcaptest: sending the greeting and READY: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	if _, err := io.ReadFull(c, make([]byte, 64)); err != nil {
		return fmt.Errorf("zmqcaptest: reading the peer's greeting: %w", err)
	}
	return nil
}
