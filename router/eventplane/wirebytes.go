package eventplane

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// maxWireBytes bounds a byte string's declared length: NATS's largest
// message (64 MB) holds no longer one.
const maxWireBytes = 64 << 20

// wireBytes is a MessagePack byte string (block hashes, token ids) whose
// declared length is checked before anything is allocated: MessagePack's
// decoder allocates the declared length first, so one malformed message
// claiming 4 GB would take a replica's memory.
type wireBytes []byte

var _ msgpack.CustomDecoder = (*wireBytes)(nil)

// DecodeMsgpack reads nil or a byte string of at most maxWireBytes.
func (b *wireBytes) DecodeMsgpack(d *msgpack.Decoder) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		*b = nil
		return d.DecodeNil()
	}
	n, err := d.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n < 0 || n > maxWireBytes {
		return fmt.Errorf("msgpack: a byte string of %d bytes, over %d", n, maxWireBytes)
	}
	out := make([]byte, n)
	if err := d.ReadFull(out); err != nil {
		return err
	}
	*b = out
	return nil
}
