package zmqcap

import (
	"encoding/binary"
	"testing"

	"github.com/kvhash/kvhash/router/zmqcap/zmqcaptest"
)

// referenceVerdict parses a whole inbound stream at once, the plain way:
// the first frame header that takes its message over max, or nil.
func referenceVerdict(max int64, stream []byte) *TooLargeError {
	if len(stream) < greetingLen {
		return nil
	}
	p := stream[greetingLen:]
	var message uint64
	for len(p) >= 2 {
		flags := p[0]
		var size uint64
		if flags&flagLong != 0 {
			if len(p) < 9 {
				return nil
			}
			size = binary.BigEndian.Uint64(p[1:9])
			p = p[9:]
		} else {
			size = uint64(p[1])
			p = p[2:]
		}
		if size > uint64(max) || message+FrameOverhead+size > uint64(max) {
			total := message + FrameOverhead + size
			if size > uint64(max) {
				total = size
			}
			return &TooLargeError{Frame: size, Message: total, Max: max, Command: flags&flagCommand != 0}
		}
		message += FrameOverhead + size
		if uint64(len(p)) < size {
			return nil
		}
		p = p[size:]
		if flags&flagMore == 0 {
			message = 0
		}
	}
	return nil
}

// FuzzGuard: whatever the bytes and however they are split into reads,
// the guard never panics and rejects exactly the header that the plain
// whole-stream parse rejects.
func FuzzGuard(f *testing.F) {
	hs := append(zmqcaptest.Greeting(), zmqcaptest.Ready("PUB")...)
	f.Add(append(append([]byte{}, hs...), zmqcaptest.LongHeader(1<<40, false)...), uint8(1), uint16(0))
	f.Add(append(append([]byte{}, hs...), zmqcaptest.Message([]byte("kv"), make([]byte, 8), make([]byte, 300))...), uint8(7), uint16(512))
	f.Add(append(append([]byte{}, hs...), 0x01, 0x00, 0x01, 0x00, 0x00, 0xFF), uint8(2), uint16(100))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, extra uint16) {
		max := int64(MinLimit) + int64(extra)
		want := referenceVerdict(max, stream)
		got, _ := scanAll(max, stream, int(chunk))
		if (want == nil) != (got == nil) || (want != nil && *want != *got) {
			t.Fatalf("chunks of %d, cap %d: guard %+v, reference %+v", chunk, max, got, want)
		}
	})
}
