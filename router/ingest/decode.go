package ingest

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// Decoder turns an engine's MessagePack payload into a Batch. It reads
// with msgpack's low-level Decoder (no reflection per event) and keeps its
// buffers between calls: use one per goroutine. The Batches it returns own
// their memory (the handler may keep them).
//
// Accepted, as vLLM and SGLang send them today and as older releases did:
//   - the batch as a positional array [ts, events] or [ts, events,
//     dp_rank|nil] (extra tail elements ignored) or as a map with keys ts,
//     events, data_parallel_rank (unknown keys ignored);
//   - each event as a map tagged "type" (vLLM >= 0.24, SGLang) or as a
//     positional array whose first element is the tag and whose trailing
//     default fields may be omitted (older vLLM);
//   - hashes as ints of either sign or as bytes (see Decoder.hash).
type Decoder struct {
	payload []byte
	r       bytes.Reader
	d       *msgpack.Decoder
	scratch []byte
	slab    slab
}

// NewDecoder returns a Decoder ready for DecodeBatch.
func NewDecoder() *Decoder {
	dec := &Decoder{}
	dec.d = msgpack.NewDecoder(&dec.r)
	return dec
}

// DecodeBatch decodes one payload. The batch is delivered whole or not at
// all: a malformed event makes the whole payload an error (a *DecodeError
// saying where), because applying a batch with one event left out would
// leave the index silently wrong, while a batch reported as lost lets the
// handler degrade the worker and rebuild it. The one exception is an event
// whose tag is unknown (an event kind newer than this decoder): it cannot
// change what the index knows, so it is left out and counted in Unknown.
// seq and topic are copied into the batch.
func (dec *Decoder) DecodeBatch(topic string, seq uint64, payload []byte) (b *Batch, unknown int, err error) {
	dec.payload = payload
	dec.r.Reset(payload)
	defer func() { dec.payload = nil }() // keep no reference to the caller's bytes
	dec.slab.reset()
	b = &Batch{Topic: topic, Seq: seq}
	unknown, err = dec.batch(b)
	if err == nil && dec.r.Len() != 0 {
		err = &fieldError{reason: ReasonMsgpack, err: fmt.Errorf("%d bytes after the batch", dec.r.Len())}
	}
	if err != nil {
		return nil, 0, toDecodeError(err)
	}
	return b, unknown, nil
}

func (dec *Decoder) batch(b *Batch) (int, error) {
	c, err := dec.peek()
	if err != nil {
		return 0, at("batch", err)
	}
	switch {
	case isArray(c):
		return dec.arrayBatch(b)
	case isMap(c):
		return dec.mapBatch(b)
	}
	return 0, at("batch", wrongType("want an array or a map, got %s", codeName(c)))
}

func (dec *Decoder) arrayBatch(b *Batch) (unknown int, err error) {
	n, err := dec.arrayLen()
	if err != nil {
		return 0, at("batch", err)
	}
	if n < 2 {
		return 0, at("batch", wrongType("array of %d elements, want [ts, events, dp_rank?]", n))
	}
	if b.Timestamp, err = dec.float(); err != nil {
		return 0, at("batch.ts", err)
	}
	if unknown, err = dec.events(b); err != nil {
		return 0, err
	}
	if n >= 3 {
		if b.DPRank, err = dec.dpRank(); err != nil {
			return 0, at("batch.data_parallel_rank", err)
		}
	}
	for i := 3; i < n; i++ {
		if err := dec.skip(0); err != nil {
			return 0, at("batch["+strconv.Itoa(i)+"]", err)
		}
	}
	return unknown, nil
}

func (dec *Decoder) mapBatch(b *Batch) (unknown int, err error) {
	n, err := dec.length(dec.d.DecodeMapLen())
	if err != nil {
		return 0, at("batch", err)
	}
	var haveTS, haveEvents bool
	for range n {
		key, err := dec.rawString()
		if err != nil {
			return 0, at("batch key", err)
		}
		switch string(key) {
		case "ts":
			haveTS = true
			if b.Timestamp, err = dec.float(); err != nil {
				return 0, at("batch.ts", err)
			}
		case "events":
			haveEvents = true
			if unknown, err = dec.events(b); err != nil {
				return 0, err
			}
		case "data_parallel_rank":
			if b.DPRank, err = dec.dpRank(); err != nil {
				return 0, at("batch.data_parallel_rank", err)
			}
		default:
			if err := dec.skip(0); err != nil {
				return 0, at("batch."+string(key), err)
			}
		}
	}
	if !haveTS || !haveEvents {
		return 0, at("batch", wrongType("map batch without ts or events"))
	}
	return unknown, nil
}

func (dec *Decoder) dpRank() (*uint32, error) {
	v, err := dec.optionalInt64()
	if err != nil || v == nil {
		return nil, err
	}
	if *v < 0 || *v > 1<<31 {
		return nil, wrongType("dp rank %d out of range", *v)
	}
	r := uint32(*v)
	return &r, nil
}

func (dec *Decoder) events(b *Batch) (unknown int, err error) {
	n, err := dec.arrayLen()
	if err != nil {
		return 0, at("batch.events", err)
	}
	b.Events = make([]Event, 0, n)
	for i := range n {
		b.Events = append(b.Events, Event{})
		ev := &b.Events[len(b.Events)-1]
		known, err := dec.event(ev)
		if err != nil {
			return 0, atEvent(i, err)
		}
		if !known {
			b.Events = b.Events[:len(b.Events)-1]
			unknown++
		}
	}
	return unknown, nil
}

// event decodes one event into ev; known is false for an unknown tag (the
// event was read past and is not kept).
func (dec *Decoder) event(ev *Event) (known bool, err error) {
	c, err := dec.peek()
	if err != nil {
		return false, err
	}
	switch {
	case isMap(c):
		return dec.mapEvent(ev)
	case isArray(c):
		return dec.arrayEvent(ev)
	}
	return false, wrongType("want an event (map or array), got %s", codeName(c))
}

func kindOf(tag []byte) Kind {
	switch string(tag) {
	case "BlockStored":
		return BlockStored
	case "BlockRemoved":
		return BlockRemoved
	case "AllBlocksCleared":
		return AllBlocksCleared
	}
	return 0
}

// The positional field order of each kind (vLLM's struct field order; the
// tag comes first on the wire).
var (
	storedFields = []string{
		"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
		"medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
		"kv_cache_spec_sliding_window", "locality", "ownership", "session_id",
		"lookahead_token_ids",
	}
	removedFields = []string{"block_hashes", "medium", "group_idx", "locality", "ownership"}
)

func (dec *Decoder) arrayEvent(ev *Event) (bool, error) {
	n, err := dec.arrayLen()
	if err != nil {
		return false, err
	}
	if n < 1 {
		return false, wrongType("empty event array (no tag)")
	}
	tag, err := dec.rawString()
	if err != nil {
		return false, at("tag", err)
	}
	ev.Kind = kindOf(tag)
	var fields []string
	switch ev.Kind {
	case BlockStored:
		fields = storedFields
	case BlockRemoved:
		fields = removedFields
	case 0:
		for i := 1; i < n; i++ {
			if err := dec.skip(0); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	name := ev.Kind.String()
	for i := 1; i < n; i++ {
		if i-1 >= len(fields) {
			if err := dec.skip(0); err != nil { // a field newer than this decoder
				return false, at(name+"["+strconv.Itoa(i)+"]", err)
			}
			continue
		}
		if err := dec.field(ev, fields[i-1]); err != nil {
			return false, at(name+"."+fields[i-1], err)
		}
	}
	if ev.Kind != AllBlocksCleared && n < 2 {
		return false, wrongType("%s without block_hashes", name)
	}
	return true, nil
}

func (dec *Decoder) mapEvent(ev *Event) (bool, error) {
	n, err := dec.length(dec.d.DecodeMapLen())
	if err != nil {
		return false, err
	}
	// msgspec writes the tag first; another encoder may not, so the fields
	// are read as they come and checked against the kind at the end.
	haveHashes := false
	var unknownTag string
	for range n {
		key, err := dec.rawString()
		if err != nil {
			return false, at("key", err)
		}
		if string(key) == "type" {
			tag, err := dec.rawString()
			if err != nil {
				return false, at("type", err)
			}
			if ev.Kind = kindOf(tag); ev.Kind == 0 {
				unknownTag = string(tag)
			}
			continue
		}
		if unknownTag != "" {
			if err := dec.skip(0); err != nil {
				return false, err
			}
			continue
		}
		name := fieldName(key)
		if name == "block_hashes" {
			haveHashes = true
		}
		if err := dec.field(ev, name); err != nil {
			if name == "" {
				name = "(unknown field)"
			}
			return false, at(eventName(ev.Kind)+"."+name, err)
		}
	}
	switch {
	case unknownTag != "":
		return false, nil
	case ev.Kind == 0:
		return false, wrongType("event map without a \"type\" tag")
	case ev.Kind != AllBlocksCleared && !haveHashes:
		return false, wrongType("%s without block_hashes", ev.Kind)
	}
	return true, nil
}

func eventName(k Kind) string {
	if k == 0 {
		return "event"
	}
	return k.String()
}

// field decodes one named field into ev. Fields of another kind are read
// into ev too and simply not meaningful for it; unknown names are skipped.
func (dec *Decoder) field(ev *Event, name string) (err error) {
	switch name {
	case "block_hashes":
		ev.BlockHashes, err = dec.hashList()
	case "parent_block_hash":
		ev.ParentHash, err = dec.optionalHash()
	case "token_ids":
		ev.TokenIDs, err = dec.tokenList()
	case "block_size":
		var v *int64
		if v, err = dec.optionalInt64(); err == nil && v != nil {
			if *v < 0 || *v > 1<<31 {
				return wrongType("block size %d out of range", *v)
			}
			ev.BlockSize = int(*v)
		}
	case "lora_id":
		ev.LoraID, err = dec.optionalInt64()
	case "medium":
		ev.Medium, err = dec.optionalString()
	case "lora_name":
		ev.LoraName, err = dec.optionalString()
	case "extra_keys":
		ev.ExtraKeys, err = dec.extraKeys()
	case "group_idx":
		ev.GroupIdx, err = dec.optionalInt64()
	case "kv_cache_spec_kind":
		ev.SpecKind, err = dec.optionalString()
	case "kv_cache_spec_sliding_window":
		ev.SlidingWindow, err = dec.optionalInt64()
	case "locality":
		ev.Locality, err = dec.optionalString()
	case "ownership":
		ev.Ownership, err = dec.optionalString()
	case "session_id":
		ev.SessionID, err = dec.optionalString()
	case "lookahead_token_ids":
		ev.LookaheadTokenIDs, err = dec.optionalTokenLists()
	case "cache_salt":
		ev.CacheSalt, err = dec.optionalString()
	default:
		err = dec.skip(0)
	}
	return err
}

// fieldName returns the known field name equal to key ("" for an unknown
// key) without allocating: the switch compares the bytes in place.
func fieldName(key []byte) string {
	switch string(key) {
	case "block_hashes":
		return "block_hashes"
	case "parent_block_hash":
		return "parent_block_hash"
	case "token_ids":
		return "token_ids"
	case "block_size":
		return "block_size"
	case "lora_id":
		return "lora_id"
	case "medium":
		return "medium"
	case "lora_name":
		return "lora_name"
	case "extra_keys":
		return "extra_keys"
	case "group_idx":
		return "group_idx"
	case "kv_cache_spec_kind":
		return "kv_cache_spec_kind"
	case "kv_cache_spec_sliding_window":
		return "kv_cache_spec_sliding_window"
	case "locality":
		return "locality"
	case "ownership":
		return "ownership"
	case "session_id":
		return "session_id"
	case "lookahead_token_ids":
		return "lookahead_token_ids"
	case "cache_salt":
		return "cache_salt"
	}
	return ""
}
