package indexerbench

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// The payloads are vLLM's EventBatch as its publisher writes it (msgspec,
// map-shaped events as vLLM has sent since ~0.24, int hashes):
//
//	[ts, [{"type": "BlockStored", "block_hashes": [...], "parent_block_hash": h|nil,
//	       "token_ids": [...], "block_size": 16, "lora_id": nil, "medium": "GPU",
//	       "lora_name": nil}, {"type": "BlockRemoved", "block_hashes": [...],
//	       "medium": "GPU"}, ...], data_parallel_rank]
//
// msgspec's omit_defaults leaves out the fields still at their default
// (extra_keys, group_idx, the cache-spec fields, vLLM 0.33's session_id
// and lookahead_token_ids); router/kvmock's encoder, held to msgspec's own
// bytes in its tests, writes the same layout.

// batchTS is every batch's timestamp: pre-encoded messages carry a fixed
// one (neither index reads it).
const batchTS = 1.767e9

// encode fills st.Messages from the planned stores, in each engine's
// order: PromptsPerBatch prompts' events a message, each prompt's removal
// RemoveLag prompts after its store, the sentinel alone last.
func (st *Stream) encode(planned []storePlan) error {
	spec := st.Spec
	perEngine := make([][]storePlan, spec.Engines)
	for _, sp := range planned {
		e := st.Prompts[sp.prompt].Engine
		perEngine[e] = append(perEngine[e], sp)
	}
	st.Messages = make([][]Message, spec.Engines)
	var b batchWriter
	for e, plans := range perEngine {
		for i, sp := range plans {
			st.addStore(&b, sp)
			if j := i - spec.RemoveLag; j >= 0 {
				st.addRemoval(&b, plans[j].prompt)
			}
			if b.events >= spec.PromptsPerBatch {
				if err := st.flush(e, &b); err != nil {
					return err
				}
			}
		}
		for j := max(0, len(plans)-spec.RemoveLag); j < len(plans); j++ {
			st.addRemoval(&b, plans[j].prompt)
		}
		if err := st.flush(e, &b); err != nil {
			return err
		}
		b.store(nil, nil, st.Sentinel, spec.BlockSize)
		st.Stored += st.Sentinel.n
		if err := st.flush(e, &b); err != nil {
			return err
		}
	}
	return nil
}

func (st *Stream) addStore(b *batchWriter, sp storePlan) {
	p := st.Prompts[sp.prompt]
	var parent *uint64
	var prefix *blockRun
	if p.Prefix >= 0 {
		pre := st.prefixes[p.Prefix]
		if sp.withPrefix {
			prefix = &pre
			st.Stored += pre.n
		} else {
			h := EngineHash(pre.first + uint64(pre.n) - 1)
			parent = &h
		}
	}
	b.store(parent, prefix, blockRun{p.OwnFirst, p.OwnBlocks}, st.Spec.BlockSize)
	st.Stored += p.OwnBlocks
}

// addRemoval removes the tail of p's own blocks it does not keep, from
// the last block back (an engine's LRU frees a prompt's tail first).
func (st *Stream) addRemoval(b *batchWriter, pi int) {
	p := st.Prompts[pi]
	if p.Kept == p.OwnBlocks {
		return
	}
	b.remove(blockRun{p.OwnFirst + uint64(p.Kept), p.OwnBlocks - p.Kept})
	st.Removed += p.OwnBlocks - p.Kept
}

func (st *Stream) flush(engine int, b *batchWriter) error {
	if b.events == 0 {
		return nil
	}
	payload, err := b.finish()
	if err != nil {
		return fmt.Errorf("engine %d: %w", engine, err)
	}
	st.Messages[engine] = append(st.Messages[engine], Message{Payload: payload, Stored: b.stored})
	st.Bytes += len(payload)
	b.reset()
	return nil
}

// batchWriter encodes the events of one batch; the first error sticks.
type batchWriter struct {
	events, stored int
	body           bytes.Buffer // the events, encoded
	enc            *msgpack.Encoder
	err            error
}

func (b *batchWriter) reset() {
	b.events, b.stored, b.err = 0, 0, nil
	b.body.Reset()
}

func (b *batchWriter) encoder() *msgpack.Encoder {
	if b.enc == nil {
		b.enc = msgpack.NewEncoder(&b.body)
	}
	return b.enc
}

func (b *batchWriter) check(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

func (b *batchWriter) key(k string) {
	b.check(b.encoder().EncodeString(k))
}

// store writes a BlockStored of prefix (if any) then own, under parent.
func (b *batchWriter) store(parent *uint64, prefix *blockRun, own blockRun, blockSize int) {
	enc := b.encoder()
	runs := []blockRun{own}
	if prefix != nil {
		runs = []blockRun{*prefix, own}
	}
	n := 0
	for _, r := range runs {
		n += r.n
	}
	b.check(enc.EncodeMapLen(8))
	b.key("type")
	b.check(enc.EncodeString("BlockStored"))
	b.key("block_hashes")
	b.check(enc.EncodeArrayLen(n))
	for _, r := range runs {
		for id := r.first; id < r.first+uint64(r.n); id++ {
			b.check(enc.EncodeUint(EngineHash(id)))
		}
	}
	b.key("parent_block_hash")
	if parent == nil {
		b.check(enc.EncodeNil())
	} else {
		b.check(enc.EncodeUint(*parent))
	}
	b.key("token_ids")
	b.check(enc.EncodeArrayLen(n * blockSize))
	bs := uint64(blockSize)
	for _, r := range runs {
		for t := r.first * bs; t < (r.first+uint64(r.n))*bs; t++ {
			b.check(enc.EncodeUint(t))
		}
	}
	b.key("block_size")
	b.check(enc.EncodeInt(int64(blockSize)))
	b.key("lora_id")
	b.check(enc.EncodeNil())
	b.key("medium")
	b.check(enc.EncodeString("GPU"))
	b.key("lora_name")
	b.check(enc.EncodeNil())
	b.events++
	b.stored += n
}

// remove writes a BlockRemoved of r's blocks, last first.
func (b *batchWriter) remove(r blockRun) {
	enc := b.encoder()
	b.check(enc.EncodeMapLen(3))
	b.key("type")
	b.check(enc.EncodeString("BlockRemoved"))
	b.key("block_hashes")
	b.check(enc.EncodeArrayLen(r.n))
	for i := r.n - 1; i >= 0; i-- {
		b.check(enc.EncodeUint(EngineHash(r.first + uint64(i))))
	}
	b.key("medium")
	b.check(enc.EncodeString("GPU"))
	b.events++
}

// finish wraps the events in the batch array.
func (b *batchWriter) finish() ([]byte, error) {
	if b.err != nil {
		return nil, fmt.Errorf("encode batch: %w", b.err)
	}
	var out bytes.Buffer
	enc := msgpack.NewEncoder(&out)
	err := enc.EncodeArrayLen(3)
	if err == nil {
		err = enc.EncodeFloat64(batchTS)
	}
	if err == nil {
		err = enc.EncodeArrayLen(b.events)
	}
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	out.Grow(b.body.Len() + 1)
	out.Write(b.body.Bytes())
	out.WriteByte(0) // data_parallel_rank 0 (a positive fixint)
	return out.Bytes(), nil
}
