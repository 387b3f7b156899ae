package kvmock

import (
	"bytes"
	"fmt"

	"github.com/kvhash/kvhash/router/enginehash"
	"github.com/vmihailenco/msgpack/v5"
)

// mediumGPU is the medium of every block kvmock holds.
const mediumGPU = "GPU"

// wireEncoder writes event batches as vLLM's publisher does (msgspec over
// its EventBatch / BlockStored / BlockRemoved / AllBlocksCleared structs):
//
//	batch: [ts, [event...], data_parallel_rank]
//	map event: {"type": "BlockStored", "block_hashes": [...], "parent_block_hash": ...,
//	            "token_ids": [...], "block_size": 16, "lora_id": nil, "medium": "GPU",
//	            "lora_name": nil}
//	array event: ["BlockStored", [...], parent, [...], 16, nil, "GPU", nil,
//	              nil, nil, nil, nil]
//
// A bytes hash is the whole digest (32 bytes for sha256, 16 for xxhash).
//
// In maps, msgspec's omit_defaults drops the fields that still hold their
// declared default (extra_keys when nil, group_idx, the cache-spec fields,
// ...) and keeps the fields without a default even when they are nil
// (lora_id, medium, lora_name). In positional arrays msgspec omits nothing
// (omit_defaults does not apply to array_like structs, msgspec issue 720):
// every field of vLLM's struct is written, defaults as nil, so the array
// layout carries BlockStored's four defaulted fields and BlockRemoved's
// group_idx as trailing nils. encode_msgspec_test.go holds both layouts to
// msgspec's bytes.
type wireEncoder struct {
	format    EventFormat
	hashes    HashFormat
	blockSize int
}

// encodeBatch encodes one batch.
func (w wireEncoder) encodeBatch(ts float64, events []Event, dpRank uint32) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := w.writeBatch(enc, ts, events, dpRank); err != nil {
		return nil, fmt.Errorf("encode event batch: %w", err)
	}
	return buf.Bytes(), nil
}

func (w wireEncoder) writeBatch(enc *msgpack.Encoder, ts float64, events []Event, dpRank uint32) error {
	if err := enc.EncodeArrayLen(3); err != nil {
		return err
	}
	if err := enc.EncodeFloat64(ts); err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(len(events)); err != nil {
		return err
	}
	for i := range events {
		if err := w.writeEvent(enc, &events[i]); err != nil {
			return fmt.Errorf("event %d (%v): %w", i, events[i].Kind, err)
		}
	}
	return enc.EncodeUint(uint64(dpRank))
}

// field is one event field, written as a map entry or an array element.
type field struct {
	name  string
	write func(*msgpack.Encoder) error
}

func (w wireEncoder) writeEvent(enc *msgpack.Encoder, ev *Event) error {
	var fields []field
	switch ev.Kind {
	case EventBlockStored:
		fields = []field{
			{"block_hashes", w.hashList(ev.Digests)},
			{"parent_block_hash", w.optionalHash(ev.Parent)},
			{"token_ids", tokenList(ev.Tokens)},
			{"block_size", func(e *msgpack.Encoder) error { return e.EncodeInt(int64(w.blockSize)) }},
			{"lora_id", optionalInt(ev.LoraID)},
			{"medium", func(e *msgpack.Encoder) error { return e.EncodeString(mediumGPU) }},
			{"lora_name", optionalString(ev.LoraName)},
		}
		// extra_keys has a default (None): a map omits it when it is nil.
		if ev.ExtraKeys != nil || w.format == EventFormatArray {
			fields = append(fields, field{"extra_keys", extraKeys(ev.ExtraKeys)})
		}
		if w.format == EventFormatArray {
			fields = append(fields, field{"group_idx", encodeNil},
				field{"kv_cache_spec_kind", encodeNil}, field{"kv_cache_spec_sliding_window", encodeNil})
		}
	case EventBlockRemoved:
		fields = []field{
			{"block_hashes", w.hashList(ev.Digests)},
			{"medium", func(e *msgpack.Encoder) error { return e.EncodeString(mediumGPU) }},
		}
		if w.format == EventFormatArray {
			fields = append(fields, field{"group_idx", encodeNil})
		}
	case EventAllBlocksCleared:
	default:
		return fmt.Errorf("unknown event kind %d", ev.Kind)
	}
	tag := ev.Kind.String()
	if w.format == EventFormatArray {
		if err := enc.EncodeArrayLen(1 + len(fields)); err != nil {
			return err
		}
		if err := enc.EncodeString(tag); err != nil {
			return err
		}
		for _, f := range fields {
			if err := f.write(enc); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		return nil
	}
	if err := enc.EncodeMapLen(1 + len(fields)); err != nil {
		return err
	}
	if err := enc.EncodeString("type"); err != nil {
		return err
	}
	if err := enc.EncodeString(tag); err != nil {
		return err
	}
	for _, f := range fields {
		if err := enc.EncodeString(f.name); err != nil {
			return err
		}
		if err := f.write(enc); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

func encodeNil(e *msgpack.Encoder) error { return e.EncodeNil() }

// optionalInt writes 0 as nil (vLLM's None: no LoRA).
func optionalInt(v int) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if v == 0 {
			return e.EncodeNil()
		}
		return e.EncodeInt(int64(v))
	}
}

// optionalString writes "" as nil.
func optionalString(s string) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if s == "" {
			return e.EncodeNil()
		}
		return e.EncodeString(s)
	}
}

// extraKeys writes vLLM's extra_keys: nil, or one entry per block, each
// nil or the tuple of its keys (msgspec writes a tuple as an array).
func extraKeys(perBlock [][]string) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if perBlock == nil {
			return e.EncodeNil()
		}
		if err := e.EncodeArrayLen(len(perBlock)); err != nil {
			return err
		}
		for _, keys := range perBlock {
			if keys == nil {
				if err := e.EncodeNil(); err != nil {
					return err
				}
				continue
			}
			if err := e.EncodeArrayLen(len(keys)); err != nil {
				return err
			}
			for _, k := range keys {
				if err := e.EncodeString(k); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func (w wireEncoder) hashList(ds []Digest) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if err := e.EncodeArrayLen(len(ds)); err != nil {
			return err
		}
		for i := range ds {
			if err := w.writeHash(e, &ds[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

func (w wireEncoder) optionalHash(d *Digest) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if d == nil {
			return e.EncodeNil()
		}
		return w.writeHash(e, d)
	}
}

// writeHash writes a digest as vLLM does: the whole digest as bytes, or
// the int vLLM derives from it (its last 8 bytes, big-endian).
func (w wireEncoder) writeHash(e *msgpack.Encoder, d *Digest) error {
	if w.hashes == HashFormatBytes {
		return e.EncodeBytes(d.Bytes())
	}
	return e.EncodeUint(WireID(*d))
}

// WireID is the u64 vLLM publishes for a digest: its last 8 bytes,
// big-endian (the same for all of vLLM's algorithms).
func WireID(d Digest) uint64 {
	return enginehash.VLLMSHA256CBOR.WireID(d)
}

func tokenList(ts []uint32) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error {
		if err := e.EncodeArrayLen(len(ts)); err != nil {
			return err
		}
		for _, t := range ts {
			if err := e.EncodeUint(uint64(t)); err != nil {
				return err
			}
		}
		return nil
	}
}
