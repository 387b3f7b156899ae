package core

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// DecodeEvent reads one KV event in Dynamo's JSON form (KvCacheEvent):
//
//	{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}
//
// data is {"stored":{...}}, {"removed":{"block_hashes":[...]}} or the
// string "cleared" ({"cleared":null} is accepted too). Hashes are read as
// exact unsigned 64-bit integers; a negative, fractional or too large
// value is an error. dp_rank defaults to 0. Unknown fields are skipped
// (their values must still be valid JSON); for a repeated field the last
// one wins. Every error wraps ErrDecode and names the offending field,
// as in "decode event: data.stored.blocks[2].block_hash: -1 is negative".
func DecodeEvent(data []byte) (Event, error) { return decodeEventInto(data, nil) }

// eventMemory is what an event decoded to be applied at once is read
// into, reused from event to event, so that applying a JSON event
// allocates nothing (Index.ApplyJSON). Each event's decoded Event points
// into it until the next event is read into it.
type eventMemory struct {
	blocks        []StoredBlock
	hashes        []uint64
	parent, start uint64
}

// eventMemories hands out eventMemory. Memory grown for an event of more
// than maxPooledBlocks blocks is not kept.
var eventMemories = sync.Pool{New: func() any { return new(eventMemory) }}

const maxPooledBlocks = 1 << 14

func putEventMemory(m *eventMemory) {
	if cap(m.blocks) <= maxPooledBlocks && cap(m.hashes) <= maxPooledBlocks {
		eventMemories.Put(m)
	}
}

// decodeEventInto is DecodeEvent reading the event's lists and optional
// numbers into m (nil: fresh memory).
func decodeEventInto(data []byte, m *eventMemory) (Event, error) {
	s := scanner{data: data, into: m}
	ev, err := s.event()
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return Event{}, err
	}
	return ev, nil
}

// DecodeRouterEvent reads one router event:
//
//	{"worker_id":7,"storage_tier":"device","event":{...}}
//
// storage_tier defaults to "device" (also when null); an unknown tier is
// an error. Field errors are named as in DecodeEvent ("event.data...").
func DecodeRouterEvent(data []byte) (RouterEvent, error) {
	return decodeRouterEventInto(data, nil)
}

// decodeRouterEventInto is DecodeRouterEvent reading into m (nil: fresh
// memory), as decodeEventInto.
func decodeRouterEventInto(data []byte, m *eventMemory) (RouterEvent, error) {
	s := scanner{data: data, into: m}
	var re RouterEvent
	var haveWorker, haveEvent bool
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "worker_id":
			re.WorkerID, err = s.field64("worker_id")
			haveWorker = true
		case "storage_tier":
			re.StorageTier, err = member(&s, "storage_tier", s.tier)
		case "event":
			re.Event, err = member(&s, "event", s.event)
			haveEvent = true
		default:
			return errUnknownMember
		}
		return err
	})
	if err == nil {
		// Trailing data is reported before a missing member: callers have
		// always seen that error first for input like `{} x`.
		err = s.end()
	}
	if err := s.required(err, need{"worker_id", haveWorker}, need{"event", haveEvent}); err != nil {
		return RouterEvent{}, err
	}
	if re.StorageTier == "" {
		re.StorageTier = TierDevice
	}
	return re, nil
}

// need is one required member of an object: its name and whether the
// object had it.
type need struct {
	name string
	have bool
}

// required returns err, the outcome of reading an object; when that is
// nil, it fails naming the first of needs the object lacked. Members are
// checked in the order given, so the error names the same one whatever
// the input's member order.
func (s *scanner) required(err error, needs ...need) error {
	if err != nil {
		return err
	}
	for _, n := range needs {
		if !n.have {
			s.push(n.name)
			err = s.fail("missing")
			s.pop()
			return err
		}
	}
	return nil
}

// member reads the value of the member name with read, with name on the
// path so that errors inside the value are named by it.
//
// Like every reader here, it may return a partial value with an error;
// only DecodeEvent and DecodeRouterEvent hand values out, and they return
// zero values on error.
func member[T any](s *scanner, name string, read func() (T, error)) (T, error) {
	s.push(name)
	v, err := read()
	s.pop()
	return v, err
}

// field64 reads the value of member name as a u64. It is member for the
// hot case, without the indirect call through a method value that the
// compiler does not resolve.
func (s *scanner) field64(name string) (uint64, error) {
	s.push(name)
	v, err := s.uint64()
	s.pop()
	return v, err
}

// list reads an array with read for each element, appending to dst. dst
// is the caller's so that each list keeps its own capacity hint, and an
// empty array yields dst itself: empty, but not nil.
func list[T any](s *scanner, dst []T, read func() (T, error)) ([]T, error) {
	err := s.array(func(int) error {
		v, err := read()
		dst = append(dst, v)
		return err
	})
	return dst, err
}

// optField64 reads the value of member name as a u64 or null (nil). The
// null is read before the member is named, so a malformed null is named
// by the enclosing object, as it always has been.
func (s *scanner) optField64(name string) (*uint64, error) {
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	v, err := s.field64(name)
	if err != nil {
		return nil, err
	}
	if s.into != nil {
		// An event has two optional numbers, told apart by name.
		p := &s.into.parent
		if name == "start_position" {
			p = &s.into.start
		}
		*p = v
		return p, nil
	}
	return &v, nil
}

func (s *scanner) tier() (StorageTier, error) {
	if null, err := s.null(); null || err != nil {
		return TierDevice, err
	}
	raw, err := s.str()
	if err != nil {
		return "", err
	}
	switch StorageTier(raw) {
	case TierDevice:
		return TierDevice, nil
	case TierHostPinned:
		return TierHostPinned, nil
	case TierDisk:
		return TierDisk, nil
	case TierExternal:
		return TierExternal, nil
	}
	return "", s.fail("unknown storage tier %q (want device, host_pinned, disk or external)", raw)
}

// event reads a KvCacheEvent. The data member yields the kind and its
// fields as one value, so a repeated data member replaces all of them.
func (s *scanner) event() (Event, error) {
	var ev Event
	var id uint64
	var rank uint32
	var haveID, haveData bool
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "event_id":
			id, err = s.field64("event_id")
			haveID = true
		case "dp_rank":
			rank, err = member(s, "dp_rank", s.uint32)
		case "data":
			ev, err = member(s, "data", s.eventData)
			haveData = true
		default:
			return errUnknownMember
		}
		return err
	})
	ev.ID, ev.DPRank = id, rank
	return ev, s.required(err, need{"event_id", haveID}, need{"data", haveData})
}

// eventData reads the data member: a one-member object naming the kind,
// or the bare string "cleared".
func (s *scanner) eventData() (Event, error) {
	if s.peek() == '"' {
		raw, err := s.str()
		if err != nil {
			return Event{}, err
		}
		if string(raw) != "cleared" {
			return Event{}, s.fail("unknown event kind %q (want stored, removed or cleared)", raw)
		}
		return Event{Kind: EventCleared}, nil
	}
	var ev Event
	err := s.object(func(key []byte) (err error) {
		// Every kind reader sets Kind, so a set Kind means a second member.
		if ev.Kind != 0 {
			return s.fail("more than one event kind")
		}
		switch string(key) {
		case "stored":
			ev, err = member(s, "stored", s.stored)
		case "removed":
			ev, err = member(s, "removed", s.removed)
		case "cleared":
			ev, err = member(s, "cleared", s.cleared)
		default:
			return s.fail("unknown event kind %q (want stored, removed or cleared)", key)
		}
		return err
	})
	if err == nil && ev.Kind == 0 {
		err = s.fail("empty object, want one of stored, removed, cleared")
	}
	return ev, err
}

func (s *scanner) stored() (Event, error) {
	ev := Event{Kind: EventStored}
	haveBlocks := false
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "parent_hash":
			ev.ParentHash, err = s.optField64("parent_hash")
		case "start_position":
			ev.StartPosition, err = s.optField64("start_position")
		case "blocks":
			ev.Blocks, err = member(s, "blocks", s.blocks)
			haveBlocks = true
		default:
			return errUnknownMember
		}
		return err
	})
	return ev, s.required(err, need{"blocks", haveBlocks})
}

func (s *scanner) removed() (Event, error) {
	ev := Event{Kind: EventRemoved}
	have := false
	err := s.object(func(key []byte) (err error) {
		if string(key) != "block_hashes" {
			return errUnknownMember
		}
		ev.BlockHashes, err = member(s, "block_hashes", s.hashList)
		have = true
		return err
	})
	return ev, s.required(err, need{"block_hashes", have})
}

// cleared reads the value of the unit variant {"cleared":null}.
func (s *scanner) cleared() (Event, error) {
	null, err := s.null()
	if err == nil && !null {
		err = s.unexpected("null")
	}
	return Event{Kind: EventCleared}, err
}

// blocks reads the stored blocks. An empty list decodes as an empty,
// non-nil slice.
//
// Unlike list, it decodes each block in place in the slice: events carry
// many blocks, and this saves copying each one and an indirect call.
func (s *scanner) blocks() ([]StoredBlock, error) {
	var blocks []StoredBlock
	if s.into != nil {
		blocks = slices.Grow(s.into.blocks[:0], s.countAhead('{'))
	} else {
		blocks = make([]StoredBlock, 0, s.countAhead('{'))
	}
	err := s.array(func(int) error {
		blocks = append(blocks, StoredBlock{})
		return s.block(&blocks[len(blocks)-1])
	})
	if s.into != nil {
		s.into.blocks = blocks
	}
	return blocks, err
}

// countAhead estimates the elements of the array that starts at the
// next byte, to size its slice in one allocation: the number of c (the
// '{' opening each block, the ',' after each hash) in the rest of the
// input, plus one. The rest is mostly the array (an event's other
// members are few and short), so this is an upper bound a few elements
// high, found at memory speed (bytes.Count), where walking the array's
// nesting first cost a quarter of the decoding. It is a capacity hint,
// never trusted, and capped so a hostile input cannot make a large
// allocation from a small payload.
func (s *scanner) countAhead(c byte) int {
	return min(bytes.Count(s.data[s.pos:], []byte{c})+1, 1<<16)
}

func (s *scanner) block(b *StoredBlock) error {
	if s.plainBlock(b) {
		return nil
	}
	var haveBlock, haveTokens bool
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "block_hash":
			b.BlockHash, err = s.field64("block_hash")
			haveBlock = true
		case "tokens_hash":
			b.TokensHash, err = s.field64("tokens_hash")
			haveTokens = true
		case "mm_extra_info":
			b.MMObjects, err = member(s, "mm_extra_info", s.mmExtraInfo)
		default:
			return errUnknownMember
		}
		return err
	})
	return s.required(err, need{"block_hash", haveBlock}, need{"tokens_hash", haveTokens})
}

// plainBlock reads a block written exactly as encoders write one, with
// plain integers: {"block_hash":X,"tokens_hash":L} (kvhash, and Dynamo
// for blocks without multimodal data when it skips the field) or the same
// ending ,"mm_extra_info":null} (Dynamo's serde, which always writes it).
// That is nearly every block of every event, and matching it as fixed
// text skips the general reader's member dispatch and key scanning, most
// of the time left per block. Anything else (other spacing or order,
// other members, a number the one-pass reader leaves to the general path)
// returns false having consumed nothing, and the general path reads it,
// with the same result or the error it words.
func (s *scanner) plainBlock(b *StoredBlock) bool {
	s.skipSpace()
	start := s.pos
	x, ok := s.plainMember(`{"block_hash":`)
	if !ok {
		s.pos = start
		return false
	}
	l, ok := s.plainMember(`,"tokens_hash":`)
	if !ok {
		s.pos = start
		return false
	}
	switch rest := s.data[s.pos:]; {
	case len(rest) > 0 && rest[0] == '}':
		s.pos++
	case hasPrefix(rest, mmNullEnd):
		s.pos += len(mmNullEnd)
	default:
		s.pos = start
		return false
	}
	*b = StoredBlock{BlockHash: x, TokensHash: l}
	return true
}

const mmNullEnd = `,"mm_extra_info":null}`

func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// plainMember reads prefix as fixed text, then a plain integer.
func (s *scanner) plainMember(prefix string) (uint64, bool) {
	if !hasPrefix(s.data[s.pos:], prefix) {
		return 0, false
	}
	s.pos += len(prefix)
	return s.plainUint64()
}

// mmExtraInfo reads {"mm_objects":[...]} or null (nil result).
func (s *scanner) mmExtraInfo() ([]MMObject, error) {
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	var objs []MMObject
	have := false
	err := s.object(func(key []byte) (err error) {
		if string(key) != "mm_objects" {
			return errUnknownMember
		}
		objs, err = member(s, "mm_objects", s.mmObjects)
		have = true
		return err
	})
	return objs, s.required(err, need{"mm_objects", have})
}

func (s *scanner) mmObjects() ([]MMObject, error) {
	return list(s, []MMObject{}, s.mmObject)
}

func (s *scanner) mmObject() (MMObject, error) {
	var o MMObject
	var haveHash, haveOffsets bool
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "mm_hash":
			o.MMHash, err = s.field64("mm_hash")
			haveHash = true
		case "offsets":
			o.Offsets, err = member(s, "offsets", s.offsets)
			haveOffsets = true
		default:
			return errUnknownMember
		}
		return err
	})
	return o, s.required(err, need{"mm_hash", haveHash}, need{"offsets", haveOffsets})
}

// offsets reads [[start,end],...].
func (s *scanner) offsets() ([][2]uint64, error) {
	return list(s, [][2]uint64{}, s.pair)
}

// errExtraElement stops a pair's array at a third element, so that pair
// can name the pair itself rather than the extra element's index.
var errExtraElement = errors.New("extra element")

func (s *scanner) pair() ([2]uint64, error) {
	var pair [2]uint64
	n := 0
	err := s.array(func(i int) (err error) {
		if i >= len(pair) {
			return errExtraElement
		}
		pair[i], err = s.uint64()
		n++
		return err
	})
	switch {
	case errors.Is(err, errExtraElement):
		return pair, s.fail("has more than 2 elements")
	case err == nil && n != len(pair):
		return pair, s.fail("has %d elements, want 2", n)
	}
	return pair, err
}

func (s *scanner) hashList() ([]uint64, error) {
	if s.into != nil {
		hashes, err := list(s, slices.Grow(s.into.hashes[:0], s.countAhead(',')), s.uint64)
		s.into.hashes = hashes
		return hashes, err
	}
	return list(s, make([]uint64, 0, s.countAhead(',')), s.uint64)
}
