package core

import (
	"fmt"
	"strconv"
)

// MarshalJSON writes the event in Dynamo's JSON form, fields in Dynamo's
// order:
//
//	{"event_id":1,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":1400,"tokens_hash":14}]}},"dp_rank":0}
//
// start_position (after parent_hash) and a block's mm_extra_info are
// written only when set, so events without them are byte-identical to
// Dynamo's. A cleared event's data is the string "cleared".
func (e Event) MarshalJSON() ([]byte, error) {
	return e.appendJSON(make([]byte, 0, 64+48*len(e.Blocks)+21*len(e.BlockHashes)))
}

func (e Event) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"event_id":`...)
	b = strconv.AppendUint(b, e.ID, 10)
	b = append(b, `,"data":`...)
	switch e.Kind {
	case EventStored:
		b = append(b, `{"stored":{"parent_hash":`...)
		b = appendOptUint(b, e.ParentHash)
		if e.StartPosition != nil {
			b = append(b, `,"start_position":`...)
			b = strconv.AppendUint(b, *e.StartPosition, 10)
		}
		b = append(b, `,"blocks":[`...)
		for i, blk := range e.Blocks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBlock(b, blk)
		}
		b = append(b, "]}}"...)
	case EventRemoved:
		b = append(b, `{"removed":{"block_hashes":[`...)
		for i, h := range e.BlockHashes {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, h, 10)
		}
		b = append(b, "]}}"...)
	case EventCleared:
		b = append(b, `"cleared"`...)
	default:
		return nil, fmt.Errorf("%w: marshal event %d: unknown kind %d", ErrInvalidArgument, e.ID, e.Kind)
	}
	b = append(b, `,"dp_rank":`...)
	b = strconv.AppendUint(b, uint64(e.DPRank), 10)
	return append(b, '}'), nil
}

func appendOptUint(b []byte, v *uint64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendUint(b, *v, 10)
}

func appendBlock(b []byte, blk StoredBlock) []byte {
	b = append(b, `{"block_hash":`...)
	b = strconv.AppendUint(b, blk.BlockHash, 10)
	b = append(b, `,"tokens_hash":`...)
	b = strconv.AppendUint(b, blk.TokensHash, 10)
	if blk.MMObjects != nil {
		b = append(b, `,"mm_extra_info":{"mm_objects":[`...)
		for i, o := range blk.MMObjects {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"mm_hash":`...)
			b = strconv.AppendUint(b, o.MMHash, 10)
			b = append(b, `,"offsets":[`...)
			for j, off := range o.Offsets {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, '[')
				b = strconv.AppendUint(b, off[0], 10)
				b = append(b, ',')
				b = strconv.AppendUint(b, off[1], 10)
				b = append(b, ']')
			}
			b = append(b, "]}"...)
		}
		b = append(b, "]}"...)
	}
	return append(b, '}')
}

// MarshalJSON writes the router event as
// {"worker_id":7,"storage_tier":"device","event":{...}}; an empty tier is
// written as "device".
func (e RouterEvent) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 96+48*len(e.Event.Blocks)+21*len(e.Event.BlockHashes)))
}

// AppendJSON appends the router event's JSON (as MarshalJSON writes it)
// to b: the allocation-free form for writing many events.
func (e RouterEvent) AppendJSON(b []byte) ([]byte, error) {
	tier := e.StorageTier
	if tier == "" {
		tier = TierDevice
	}
	if !tier.valid() {
		return nil, fmt.Errorf("%w: marshal router event: unknown storage tier %q", ErrInvalidArgument, tier)
	}
	b = append(b, `{"worker_id":`...)
	b = strconv.AppendUint(b, e.WorkerID, 10)
	b = append(b, `,"storage_tier":"`...)
	b = append(b, tier...)
	b = append(b, `","event":`...)
	b, err := e.Event.appendJSON(b)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
