package core

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
func DecodeEvent(data []byte) (Event, error) {
	s := scanner{data: data}
	var ev Event
	if err := s.event(&ev); err != nil {
		return Event{}, err
	}
	if err := s.end(); err != nil {
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
	s := scanner{data: data}
	var re RouterEvent
	var haveWorker, haveEvent bool
	if err := s.objectStart(); err != nil {
		return RouterEvent{}, err
	}
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return RouterEvent{}, err
		}
		if done {
			break
		}
		switch string(key) {
		case "worker_id":
			if re.WorkerID, err = s.field64("worker_id"); err != nil {
				return RouterEvent{}, err
			}
			haveWorker = true
		case "storage_tier":
			s.push("storage_tier")
			re.StorageTier, err = s.tier()
			s.pop()
			if err != nil {
				return RouterEvent{}, err
			}
		case "event":
			s.push("event")
			err = s.event(&re.Event)
			s.pop()
			if err != nil {
				return RouterEvent{}, err
			}
			haveEvent = true
		default:
			if err := s.skip(1); err != nil {
				return RouterEvent{}, err
			}
		}
	}
	if err := s.end(); err != nil {
		return RouterEvent{}, err
	}
	if err := s.required(haveWorker, "worker_id"); err != nil {
		return RouterEvent{}, err
	}
	if err := s.required(haveEvent, "event"); err != nil {
		return RouterEvent{}, err
	}
	if re.StorageTier == "" {
		re.StorageTier = TierDevice
	}
	return re, nil
}

// required fails, naming the member, when a required member is absent.
func (s *scanner) required(have bool, name string) error {
	if have {
		return nil
	}
	s.push(name)
	err := s.fail("missing")
	s.pop()
	return err
}

// field64 reads the value of member name as a u64.
func (s *scanner) field64(name string) (uint64, error) {
	s.push(name)
	v, err := s.uint64()
	s.pop()
	return v, err
}

// optField64 reads the value of member name as a u64 or null (nil).
func (s *scanner) optField64(name string) (*uint64, error) {
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	v, err := s.field64(name)
	if err != nil {
		return nil, err
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

func (s *scanner) event(ev *Event) error {
	var haveID, haveData bool
	if err := s.objectStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "event_id":
			if ev.ID, err = s.field64("event_id"); err != nil {
				return err
			}
			haveID = true
		case "dp_rank":
			s.push("dp_rank")
			ev.DPRank, err = s.uint32()
			s.pop()
			if err != nil {
				return err
			}
		case "data":
			s.push("data")
			err = s.eventData(ev)
			s.pop()
			if err != nil {
				return err
			}
			haveData = true
		default:
			if err := s.skip(1); err != nil {
				return err
			}
		}
	}
	if err := s.required(haveID, "event_id"); err != nil {
		return err
	}
	return s.required(haveData, "data")
}

// eventData reads the data member: a one-member object naming the kind,
// or the bare string "cleared".
func (s *scanner) eventData(ev *Event) error {
	ev.Kind, ev.ParentHash, ev.StartPosition, ev.Blocks, ev.BlockHashes = 0, nil, nil, nil, nil
	if s.peek() == '"' {
		raw, err := s.str()
		if err != nil {
			return err
		}
		if string(raw) != "cleared" {
			return s.fail("unknown event kind %q (want stored, removed or cleared)", raw)
		}
		ev.Kind = EventCleared
		return nil
	}
	if err := s.objectStart(); err != nil {
		return err
	}
	key, done, err := s.nextKey(true)
	if err != nil {
		return err
	}
	if done {
		return s.fail("empty object, want one of stored, removed, cleared")
	}
	switch string(key) {
	case "stored":
		ev.Kind = EventStored
		s.push("stored")
		err = s.stored(ev)
	case "removed":
		ev.Kind = EventRemoved
		s.push("removed")
		err = s.removed(ev)
	case "cleared":
		ev.Kind = EventCleared
		s.push("cleared")
		if null, nerr := s.null(); nerr != nil {
			err = nerr
		} else if !null {
			err = s.unexpected("null")
		}
	default:
		return s.fail("unknown event kind %q (want stored, removed or cleared)", key)
	}
	if err != nil {
		return err
	}
	s.pop()
	if _, done, err = s.nextKey(false); err != nil {
		return err
	}
	if !done {
		return s.fail("more than one event kind")
	}
	return nil
}

func (s *scanner) stored(ev *Event) error {
	if err := s.objectStart(); err != nil {
		return err
	}
	haveBlocks := false
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "parent_hash":
			if ev.ParentHash, err = s.optField64("parent_hash"); err != nil {
				return err
			}
		case "start_position":
			if ev.StartPosition, err = s.optField64("start_position"); err != nil {
				return err
			}
		case "blocks":
			s.push("blocks")
			ev.Blocks, err = s.blocks()
			s.pop()
			if err != nil {
				return err
			}
			haveBlocks = true
		default:
			if err := s.skip(1); err != nil {
				return err
			}
		}
	}
	return s.required(haveBlocks, "blocks")
}

// blocks reads the stored blocks. An empty list decodes as an empty,
// non-nil slice.
func (s *scanner) blocks() ([]StoredBlock, error) {
	if err := s.arrayStart(); err != nil {
		return nil, err
	}
	blocks := make([]StoredBlock, 0, s.countElems())
	for i := 0; ; i++ {
		more, err := s.nextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return blocks, nil
		}
		s.pushIndex(i)
		var b StoredBlock
		err = s.block(&b)
		s.pop()
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
}

// countElems estimates the elements of the array that starts at the
// current position (just after '['), to size its slice in one
// allocation: the number of '{' or ',' at nesting depth zero, counting
// only up to the array's end. Strings are skipped roughly; the count is
// a capacity hint, never trusted.
func (s *scanner) countElems() int {
	n, depth := 0, 0
	for i := s.pos; i < len(s.data) && n < 1<<16; i++ {
		switch s.data[i] {
		case '[', '{':
			if depth == 0 && s.data[i] == '{' {
				n++
			}
			depth++
		case ']', '}':
			if depth == 0 {
				return n
			}
			depth--
		case '"':
			for i++; i < len(s.data) && s.data[i] != '"'; i++ {
				if s.data[i] == '\\' {
					i++
				}
			}
		}
	}
	return n
}

func (s *scanner) block(b *StoredBlock) error {
	var haveBlock, haveTokens bool
	if err := s.objectStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "block_hash":
			if b.BlockHash, err = s.field64("block_hash"); err != nil {
				return err
			}
			haveBlock = true
		case "tokens_hash":
			if b.TokensHash, err = s.field64("tokens_hash"); err != nil {
				return err
			}
			haveTokens = true
		case "mm_extra_info":
			s.push("mm_extra_info")
			b.MMObjects, err = s.mmExtraInfo()
			s.pop()
			if err != nil {
				return err
			}
		default:
			if err := s.skip(1); err != nil {
				return err
			}
		}
	}
	if err := s.required(haveBlock, "block_hash"); err != nil {
		return err
	}
	return s.required(haveTokens, "tokens_hash")
}

// mmExtraInfo reads {"mm_objects":[...]} or null (nil result).
func (s *scanner) mmExtraInfo() ([]MMObject, error) {
	if null, err := s.null(); null || err != nil {
		return nil, err
	}
	if err := s.objectStart(); err != nil {
		return nil, err
	}
	var objs []MMObject
	have := false
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		if string(key) != "mm_objects" {
			if err := s.skip(1); err != nil {
				return nil, err
			}
			continue
		}
		s.push("mm_objects")
		objs, err = s.mmObjects()
		s.pop()
		if err != nil {
			return nil, err
		}
		have = true
	}
	if err := s.required(have, "mm_objects"); err != nil {
		return nil, err
	}
	return objs, nil
}

func (s *scanner) mmObjects() ([]MMObject, error) {
	if err := s.arrayStart(); err != nil {
		return nil, err
	}
	objs := []MMObject{}
	for i := 0; ; i++ {
		more, err := s.nextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return objs, nil
		}
		s.pushIndex(i)
		var o MMObject
		err = s.mmObject(&o)
		s.pop()
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

func (s *scanner) mmObject(o *MMObject) error {
	var haveHash, haveOffsets bool
	if err := s.objectStart(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		switch string(key) {
		case "mm_hash":
			if o.MMHash, err = s.field64("mm_hash"); err != nil {
				return err
			}
			haveHash = true
		case "offsets":
			s.push("offsets")
			o.Offsets, err = s.offsets()
			s.pop()
			if err != nil {
				return err
			}
			haveOffsets = true
		default:
			if err := s.skip(1); err != nil {
				return err
			}
		}
	}
	if err := s.required(haveHash, "mm_hash"); err != nil {
		return err
	}
	return s.required(haveOffsets, "offsets")
}

// offsets reads [[start,end],...].
func (s *scanner) offsets() ([][2]uint64, error) {
	if err := s.arrayStart(); err != nil {
		return nil, err
	}
	out := [][2]uint64{}
	for i := 0; ; i++ {
		more, err := s.nextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		s.pushIndex(i)
		pair, err := s.pair()
		s.pop()
		if err != nil {
			return nil, err
		}
		out = append(out, pair)
	}
}

func (s *scanner) pair() ([2]uint64, error) {
	var pair [2]uint64
	if err := s.arrayStart(); err != nil {
		return pair, err
	}
	for j := 0; ; j++ {
		more, err := s.nextElem(j == 0)
		if err != nil {
			return pair, err
		}
		if !more {
			if j != 2 {
				return pair, s.fail("has %d elements, want 2", j)
			}
			return pair, nil
		}
		if j >= 2 {
			return pair, s.fail("has more than 2 elements")
		}
		s.pushIndex(j)
		pair[j], err = s.uint64()
		s.pop()
		if err != nil {
			return pair, err
		}
	}
}

func (s *scanner) removed(ev *Event) error {
	if err := s.objectStart(); err != nil {
		return err
	}
	have := false
	for first := true; ; first = false {
		key, done, err := s.nextKey(first)
		if err != nil {
			return err
		}
		if done {
			break
		}
		if string(key) != "block_hashes" {
			if err := s.skip(1); err != nil {
				return err
			}
			continue
		}
		s.push("block_hashes")
		ev.BlockHashes, err = s.hashList()
		s.pop()
		if err != nil {
			return err
		}
		have = true
	}
	return s.required(have, "block_hashes")
}

func (s *scanner) hashList() ([]uint64, error) {
	if err := s.arrayStart(); err != nil {
		return nil, err
	}
	hashes := make([]uint64, 0, 8)
	for i := 0; ; i++ {
		more, err := s.nextElem(i == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			return hashes, nil
		}
		s.pushIndex(i)
		h, err := s.uint64()
		s.pop()
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
}
