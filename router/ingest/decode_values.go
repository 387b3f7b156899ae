package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The value readers below check each MessagePack code themselves before
// calling msgpack's typed readers: those accept nil as 0 and floats where
// an int belongs, which would turn a wrong type into a wrong block.

var errTruncated = errors.New("truncated payload")

func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

func codeName(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case c == msgpcode.True || c == msgpcode.False:
		return "bool"
	case isInt(c):
		return "int"
	case c == msgpcode.Float || c == msgpcode.Double:
		return "float"
	case msgpcode.IsString(c):
		return "string"
	case msgpcode.IsBin(c):
		return "bytes"
	case isArray(c):
		return "array"
	case isMap(c):
		return "map"
	case msgpcode.IsExt(c):
		return "ext"
	}
	return fmt.Sprintf("code 0x%02x", c)
}

func (dec *Decoder) peek() (byte, error) {
	c, err := dec.d.PeekCode()
	if err != nil {
		return 0, errTruncated
	}
	if c == msgpcode.Nil+1 { // 0xc1: "never used" in the MessagePack spec
		return 0, &fieldError{reason: ReasonMsgpack, err: errors.New("invalid MessagePack code 0xc1")}
	}
	return c, nil
}

// length checks a container or string length against the bytes left, so
// that a forged length never makes the decoder allocate more than the
// payload could hold (every element takes at least one byte).
func (dec *Decoder) length(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	if n > dec.r.Len() {
		return 0, fmt.Errorf("length %d exceeds the %d bytes left", n, dec.r.Len())
	}
	return n, nil
}

// arrayLen reads an array header; nil is an error (use optionalArrayLen).
func (dec *Decoder) arrayLen() (int, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, err
	}
	if !isArray(c) {
		return 0, wrongType("want an array, got %s", codeName(c))
	}
	return dec.length(dec.d.DecodeArrayLen())
}

// optionalArrayLen reads an array header or nil (-1).
func (dec *Decoder) optionalArrayLen() (int, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Nil {
		return -1, dec.d.DecodeNil()
	}
	return dec.arrayLen()
}

// rawString reads a string into the decoder's scratch buffer: valid until
// the next read. Map keys and tags are compared without allocating.
func (dec *Decoder) rawString() ([]byte, error) {
	c, err := dec.peek()
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsString(c) {
		return nil, wrongType("want a string, got %s", codeName(c))
	}
	n, err := dec.length(dec.d.DecodeBytesLen())
	if err != nil {
		return nil, err
	}
	if cap(dec.scratch) < n {
		dec.scratch = make([]byte, n)
	}
	dec.scratch = dec.scratch[:n]
	if err := dec.d.ReadFull(dec.scratch); err != nil {
		return nil, errTruncated
	}
	return dec.scratch, nil
}

// optionalString reads a string or nil (""). An int is taken as its
// decimal text: SGLang builds have sent numeric session ids.
func (dec *Decoder) optionalString() (string, error) {
	c, err := dec.peek()
	if err != nil {
		return "", err
	}
	switch {
	case c == msgpcode.Nil:
		return "", dec.d.DecodeNil()
	case isInt(c):
		v, err := dec.d.DecodeInt64()
		return strconv.FormatInt(v, 10), err
	}
	b, err := dec.rawString()
	if err != nil {
		return "", err
	}
	return intern(b), nil
}

// intern returns the few strings every event repeats without allocating.
func intern(b []byte) string {
	switch string(b) {
	case "GPU":
		return "GPU"
	case "CPU":
		return "CPU"
	case "LOCAL":
		return "LOCAL"
	case "REMOTE":
		return "REMOTE"
	case "full_attention":
		return "full_attention"
	case "sliding_window":
		return "sliding_window"
	case "":
		return ""
	}
	return string(b)
}

func (dec *Decoder) int64() (int64, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, err
	}
	if !isInt(c) {
		return 0, wrongType("want an int, got %s", codeName(c))
	}
	return dec.d.DecodeInt64()
}

func (dec *Decoder) optionalInt64() (*int64, error) {
	c, err := dec.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, dec.d.DecodeNil()
	}
	v, err := dec.int64()
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// float reads the batch timestamp: a float, or an int (a hand-written
// publisher may send whole seconds).
func (dec *Decoder) float() (float64, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Float || c == msgpcode.Double:
		return dec.d.DecodeFloat64()
	case isInt(c):
		v, err := dec.d.DecodeInt64()
		return float64(v), err
	}
	return 0, wrongType("want a float, got %s", codeName(c))
}

// hash reads an engine block hash: an int of either sign (its bits as
// u64: SGLang and TensorRT-LLM send i64, vLLM u64), or bytes as vLLM turns
// a digest into an int (the last 8 bytes, big-endian; a shorter value is
// zero-extended).
func (dec *Decoder) hash() (uint64, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case isInt(c):
		return dec.d.DecodeUint64()
	case msgpcode.IsBin(c):
		n, err := dec.length(dec.d.DecodeBytesLen())
		if err != nil {
			return 0, err
		}
		if cap(dec.scratch) < n {
			dec.scratch = make([]byte, n)
		}
		b := dec.scratch[:n]
		if err := dec.d.ReadFull(b); err != nil {
			return 0, errTruncated
		}
		if n >= 8 {
			return binary.BigEndian.Uint64(b[n-8:]), nil
		}
		var v uint64
		for _, x := range b {
			v = v<<8 | uint64(x)
		}
		return v, nil
	}
	return 0, wrongType("want an int or bytes hash, got %s", codeName(c))
}

func (dec *Decoder) optionalHash() (*uint64, error) {
	c, err := dec.peek()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, dec.d.DecodeNil()
	}
	v, err := dec.hash()
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func (dec *Decoder) hashList() ([]uint64, error) {
	n, err := dec.arrayLen()
	if err != nil {
		return nil, err
	}
	out := dec.slab.u64(n, dec.r.Len())
	for i := dec.fastHashes(out); i < len(out); i++ {
		if out[i], err = dec.hash(); err != nil {
			return nil, at("["+strconv.Itoa(i)+"]", err)
		}
	}
	return out, nil
}

// tokenList reads token ids; each must fit in u32 (the canonical hash
// reads them as LE u32: a wider id would hash as some other token).
func (dec *Decoder) tokenList() ([]uint32, error) {
	n, err := dec.arrayLen()
	if err != nil {
		return nil, err
	}
	out := dec.slab.u32(n, dec.r.Len())
	for i := dec.fastTokens(out); i < len(out); i++ {
		c, err := dec.peek()
		if err != nil {
			return nil, at("["+strconv.Itoa(i)+"]", err)
		}
		if !isInt(c) {
			return nil, at("["+strconv.Itoa(i)+"]", wrongType("want a token id (int), got %s", codeName(c)))
		}
		v, err := dec.d.DecodeInt64()
		if err != nil {
			return nil, at("["+strconv.Itoa(i)+"]", err)
		}
		if v < 0 || v > math.MaxUint32 {
			return nil, at("["+strconv.Itoa(i)+"]", &fieldError{reason: ReasonTokenRange,
				err: fmt.Errorf("token id %d does not fit in u32", v)})
		}
		out[i] = uint32(v)
	}
	return out, nil
}

// optionalTokenLists reads lookahead_token_ids: nil, or one entry per
// block, each nil or a token list.
func (dec *Decoder) optionalTokenLists() ([][]uint32, error) {
	n, err := dec.optionalArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([][]uint32, n)
	for i := range out {
		c, err := dec.peek()
		if err != nil {
			return nil, err
		}
		if c == msgpcode.Nil {
			_ = dec.d.DecodeNil()
			continue
		}
		if out[i], err = dec.tokenList(); err != nil {
			return nil, at("["+strconv.Itoa(i)+"]", err)
		}
	}
	return out, nil
}

// extraKeys reads vLLM's extra_keys: nil, or one entry per block, each nil
// or a tuple of arbitrary values (LoRA name, multimodal ids, the salt).
// Rare and small: decoded generically.
func (dec *Decoder) extraKeys() ([][]any, error) {
	n, err := dec.optionalArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	out := make([][]any, n)
	for i := range out {
		m, err := dec.optionalArrayLen()
		if err != nil {
			return nil, at("["+strconv.Itoa(i)+"]", err)
		}
		if m < 0 {
			continue
		}
		entry := make([]any, m)
		for j := range entry {
			if entry[j], err = dec.anyValue(0); err != nil {
				return nil, at("["+strconv.Itoa(i)+"]["+strconv.Itoa(j)+"]", err)
			}
		}
		out[i] = entry
	}
	return out, nil
}

// maxDepth bounds the nesting of values the decoder walks generically
// (extra keys, skipped unknown fields): a forged payload of nested arrays
// must not grow the stack without bound.
const maxDepth = 32

// anyValue decodes one value of unknown shape: nil, bool, int64 (uint64
// above MaxInt64), float64, string, []byte, []any, map[string]any.
func (dec *Decoder) anyValue(depth int) (any, error) {
	if depth > maxDepth {
		return nil, wrongType("values nested deeper than %d", maxDepth)
	}
	c, err := dec.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case isArray(c):
		n, err := dec.arrayLen()
		if err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = dec.anyValue(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case isMap(c):
		n, err := dec.length(dec.d.DecodeMapLen())
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, n)
		for range n {
			k, err := dec.anyValue(depth + 1)
			if err != nil {
				return nil, err
			}
			v, err := dec.anyValue(depth + 1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = v
		}
		return out, nil
	case c == msgpcode.Uint64:
		return dec.d.DecodeUint64()
	case isInt(c):
		return dec.d.DecodeInt64()
	case msgpcode.IsString(c):
		b, err := dec.rawString()
		return string(b), err
	case msgpcode.IsBin(c):
		n, err := dec.length(dec.d.DecodeBytesLen())
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		if err := dec.d.ReadFull(b); err != nil {
			return nil, errTruncated
		}
		return b, nil
	}
	if msgpcode.IsExt(c) {
		return nil, wrongType("unexpected MessagePack extension")
	}
	v, err := dec.d.DecodeInterface() // nil, bool, float: scalars only here
	if err != nil {
		return nil, err
	}
	if f, ok := v.(float32); ok {
		return float64(f), nil
	}
	return v, nil
}

// skip passes over one value of any shape (unknown keys, extra tail
// elements), with the same depth bound.
func (dec *Decoder) skip(depth int) error {
	if depth > maxDepth {
		return wrongType("values nested deeper than %d", maxDepth)
	}
	c, err := dec.peek()
	if err != nil {
		return err
	}
	switch {
	case isArray(c):
		n, err := dec.arrayLen()
		if err != nil {
			return err
		}
		for range n {
			if err := dec.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case isMap(c):
		n, err := dec.length(dec.d.DecodeMapLen())
		if err != nil {
			return err
		}
		for range 2 * n {
			if err := dec.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return dec.d.Skip() // a scalar, a string, bytes or an extension
}
