package eventplane

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvhash/kvhash/router/ingest"
	"github.com/kvhash/kvhash/router/internal/msgpackcheck"
)

// WireVersion is the first byte of every event-plane message; the rest is
// MessagePack. A replica that reads a version it does not know skips the
// message and says so (upgrade every replica before the publishers).
const WireVersion = 1

// msgKind says what a message carries.
type msgKind uint8

const (
	kindBatch  msgKind = 1 // an engine batch
	kindStream msgKind = 2 // a stream event (gap, restart, ...)
)

// wireMsg is one message on the stream: the Source that produced it and
// either a batch or a stream event. Positional (as_array) to stay small.
type wireMsg struct {
	_msgpack struct{} `msgpack:",as_array"`

	Kind     msgKind
	Model    string
	Worker   uint64
	Rank     uint32
	Endpoint string
	Topic    string

	// Batches.
	Seq       uint64
	Timestamp float64
	BatchRank *uint32
	BatchTop  string
	Events    []wireEvent

	// Stream events.
	StreamKind uint8
	From, To   uint64
	Err        string
}

// wireEvent mirrors ingest.Event field for field, except that block
// hashes and token ids, nearly all of the bytes, travel as little-endian
// byte strings: 8 and 4 bytes each, copied rather than decoded value by
// value (MessagePack's reflection spent most of a replica's time there).
type wireEvent struct {
	_msgpack struct{} `msgpack:",as_array"`

	Kind              uint8
	BlockHashes       wireBytes // u64 LE each
	Medium            string
	GroupIdx          *int64
	Locality          string
	Ownership         string
	ParentHash        *uint64
	TokenIDs          wireBytes // u32 LE each
	BlockSize         int
	LoraID            *int64
	LoraName          string
	ExtraKeys         [][]any
	SpecKind          string
	SlidingWindow     *int64
	CacheSalt         string
	SessionID         string
	LookaheadTokenIDs [][]uint32
}

// Message is a decoded event-plane message: one Handler call.
type Message struct {
	Source ingest.Source
	Batch  *ingest.Batch       // nil for a stream event
	Stream *ingest.StreamEvent // nil for a batch
}

// EncodeBatch encodes one engine batch of src.
func EncodeBatch(src ingest.Source, b *ingest.Batch) ([]byte, error) {
	m := sourceMsg(kindBatch, src)
	m.Seq, m.Timestamp, m.BatchRank, m.BatchTop = b.Seq, b.Timestamp, b.DPRank, b.Topic
	m.Events = make([]wireEvent, len(b.Events))
	for i := range b.Events {
		m.Events[i] = toWire(&b.Events[i])
	}
	return marshal(&m)
}

// EncodeStream encodes one stream event of src.
func EncodeStream(src ingest.Source, ev ingest.StreamEvent) ([]byte, error) {
	m := sourceMsg(kindStream, src)
	m.StreamKind, m.From, m.To = uint8(ev.Kind), ev.From, ev.To
	if ev.Err != nil {
		m.Err = ev.Err.Error()
	}
	return marshal(&m)
}

func sourceMsg(k msgKind, src ingest.Source) wireMsg {
	return wireMsg{Kind: k, Model: src.Model, Worker: src.WorkerID, Rank: src.DPRank, Endpoint: src.Endpoint, Topic: src.Topic}
}

func marshal(m *wireMsg) ([]byte, error) {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("eventplane: encode: %w", err)
	}
	return append([]byte{WireVersion}, body...), nil
}

// Errors of Decode, wrapped with details.
var (
	ErrVersion   = errors.New("eventplane: unknown wire version")
	ErrMalformed = errors.New("eventplane: malformed message")
)

// Decode reads one message. It never panics: bad input is an error.
func Decode(data []byte) (msg Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = Message{}, fmt.Errorf("%w: decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(data) == 0 {
		return Message{}, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if data[0] != WireVersion {
		return Message{}, fmt.Errorf("%w: %d (this build reads %d)", ErrVersion, data[0], WireVersion)
	}
	// The library sizes a slice by its header: the lengths are checked
	// against the bytes first (msgpackcheck).
	if err := msgpackcheck.Lengths(data[1:]); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var m wireMsg
	if err := msgpack.Unmarshal(data[1:], &m); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	msg.Source = ingest.Source{Model: m.Model, WorkerID: m.Worker, DPRank: m.Rank, Endpoint: m.Endpoint, Topic: m.Topic}
	switch m.Kind {
	case kindBatch:
		b := &ingest.Batch{Topic: m.BatchTop, Seq: m.Seq, Timestamp: m.Timestamp, DPRank: m.BatchRank}
		b.Events = make([]ingest.Event, len(m.Events))
		for i := range m.Events {
			e, err := fromWire(&m.Events[i])
			if err != nil {
				return Message{}, fmt.Errorf("%w: batch seq %d event %d: %w", ErrMalformed, m.Seq, i, err)
			}
			b.Events[i] = e
		}
		msg.Batch = b
	case kindStream:
		k := ingest.StreamEventKind(m.StreamKind)
		if k < ingest.StreamConnected || k > ingest.StreamMalformed {
			return Message{}, fmt.Errorf("%w: stream event kind %d", ErrMalformed, m.StreamKind)
		}
		ev := &ingest.StreamEvent{Kind: k, From: m.From, To: m.To}
		if m.Err != "" {
			ev.Err = errors.New(m.Err)
		}
		msg.Stream = ev
	default:
		return Message{}, fmt.Errorf("%w: message kind %d", ErrMalformed, m.Kind)
	}
	return msg, nil
}

func toWire(e *ingest.Event) wireEvent {
	return wireEvent{
		Kind: uint8(e.Kind), BlockHashes: u64Bytes(e.BlockHashes), Medium: e.Medium, GroupIdx: e.GroupIdx,
		Locality: e.Locality, Ownership: e.Ownership, ParentHash: e.ParentHash, TokenIDs: u32Bytes(e.TokenIDs),
		BlockSize: e.BlockSize, LoraID: e.LoraID, LoraName: e.LoraName, ExtraKeys: e.ExtraKeys,
		SpecKind: e.SpecKind, SlidingWindow: e.SlidingWindow, CacheSalt: e.CacheSalt,
		SessionID: e.SessionID, LookaheadTokenIDs: e.LookaheadTokenIDs,
	}
}

func fromWire(w *wireEvent) (ingest.Event, error) {
	k := ingest.Kind(w.Kind)
	if k != ingest.BlockStored && k != ingest.BlockRemoved && k != ingest.AllBlocksCleared {
		return ingest.Event{}, fmt.Errorf("event kind %d", w.Kind)
	}
	hashes, err := bytesU64(w.BlockHashes)
	if err != nil {
		return ingest.Event{}, fmt.Errorf("block hashes: %w", err)
	}
	tokens, err := bytesU32(w.TokenIDs)
	if err != nil {
		return ingest.Event{}, fmt.Errorf("token ids: %w", err)
	}
	return ingest.Event{
		Kind: k, BlockHashes: hashes, Medium: w.Medium, GroupIdx: w.GroupIdx,
		Locality: w.Locality, Ownership: w.Ownership, ParentHash: w.ParentHash, TokenIDs: tokens,
		BlockSize: w.BlockSize, LoraID: w.LoraID, LoraName: w.LoraName, ExtraKeys: w.ExtraKeys,
		SpecKind: w.SpecKind, SlidingWindow: w.SlidingWindow, CacheSalt: w.CacheSalt,
		SessionID: w.SessionID, LookaheadTokenIDs: w.LookaheadTokenIDs,
	}, nil
}

// u64Bytes packs hashes little-endian; nil stays nil.
func u64Bytes(v []uint64) []byte {
	if v == nil {
		return nil
	}
	out := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(out[8*i:], x)
	}
	return out
}

func bytesU64(b []byte) ([]uint64, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of u64s", len(b))
	}
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out, nil
}

// u32Bytes packs token ids little-endian; nil stays nil.
func u32Bytes(v []uint32) []byte {
	if v == nil {
		return nil
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], x)
	}
	return out
}

func bytesU32(b []byte) ([]uint32, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of u32s", len(b))
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, nil
}
