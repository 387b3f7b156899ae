package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// The file's fixed parts:
//
//	magic "KVRSNAP\x00" | version u32 | block size u32 | payload length u64 |
//	payload | SHA-256 of everything before it
//
// Integers in the header are little-endian. The payload is a sequence of
// uvarints, length-prefixed strings and fixed 8-byte little-endian hashes
// (engine and local hashes look random, so varints would only grow them):
// the workers, each index's dump, then the ranks; see encoder.
const (
	// Magic opens every snapshot.
	Magic = "KVRSNAP\x00"
	// Version is the format version this build writes and reads.
	Version = 1

	headerSize = len(Magic) + 4 + 4 + 8
	sumSize    = sha256.Size
)

// Encode returns s in the snapshot format.
func Encode(s indexer.Saved) ([]byte, error) {
	if s.BlockSize <= 0 || s.BlockSize > 1<<31 {
		return nil, fmt.Errorf("snapshot: encode: block size %d", s.BlockSize)
	}
	e := encoder{b: make([]byte, headerSize, 4096)}
	copy(e.b, Magic)
	binary.LittleEndian.PutUint32(e.b[8:], Version)
	binary.LittleEndian.PutUint32(e.b[12:], uint32(s.BlockSize))
	e.saved(&s)
	binary.LittleEndian.PutUint64(e.b[16:], uint64(len(e.b)-headerSize))
	sum := sha256.Sum256(e.b)
	return append(e.b, sum[:]...), nil
}

// Decode parses a snapshot written at blockSize. Errors wrap ErrForeign
// (not a snapshot, another version or block size) or ErrCorrupt.
func Decode(data []byte, blockSize int) (indexer.Saved, error) {
	if len(data) < len(Magic) || !bytes.Equal(data[:len(Magic)], []byte(Magic)) {
		return indexer.Saved{}, fmt.Errorf("%w: no kvrouter snapshot header", ErrForeign)
	}
	if len(data) < headerSize+sumSize {
		return indexer.Saved{}, fmt.Errorf("%w: truncated: %d bytes", ErrCorrupt, len(data))
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != Version {
		return indexer.Saved{}, fmt.Errorf("%w: format version %d, this build reads %d", ErrForeign, v, Version)
	}
	n := binary.LittleEndian.Uint64(data[16:])
	if n != uint64(len(data)-headerSize-sumSize) {
		return indexer.Saved{}, fmt.Errorf("%w: payload of %d bytes announced, %d present", ErrCorrupt, n, len(data)-headerSize-sumSize)
	}
	body := data[:len(data)-sumSize]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(body):]) {
		return indexer.Saved{}, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if bs := binary.LittleEndian.Uint32(data[12:]); int64(bs) != int64(blockSize) {
		return indexer.Saved{}, fmt.Errorf("%w: written at block size %d, the router runs at %d", ErrForeign, bs, blockSize)
	}
	d := decoder{b: body[headerSize:]}
	s := d.saved()
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the payload", len(d.b))
	}
	if d.err != nil {
		return indexer.Saved{}, d.err
	}
	s.BlockSize = blockSize
	return s, nil
}

// encoder appends the payload.
type encoder struct{ b []byte }

func (e *encoder) uv(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) str(s string) { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) flag(b bool) {
	if b {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) optUV(v *uint64) {
	e.flag(v != nil)
	if v != nil {
		e.uv(*v)
	}
}

func (e *encoder) saved(s *indexer.Saved) {
	e.uv(uint64(len(s.Workers)))
	for _, w := range s.Workers {
		e.uv(w.WorkerID)
		for _, f := range []string{w.Model, w.Tenant, w.Endpoint, w.ReplayEndpoint, w.Topic, w.BaseURL, w.EngineHash} {
			e.str(f)
		}
		e.uv(uint64(w.DPSize))
	}
	e.uv(uint64(len(s.Indexes)))
	for _, is := range s.Indexes {
		e.str(is.Key.Model)
		e.str(is.Key.Tenant)
		e.uv(uint64(len(is.Events)))
		for i := range is.Events {
			e.event(&is.Events[i])
		}
	}
	e.uv(uint64(len(s.Ranks)))
	for _, r := range s.Ranks {
		e.uv(r.Worker.ID)
		e.uv(uint64(r.Worker.DPRank))
		e.flag(r.HaveSeq)
		e.uv(r.LastSeq)
		e.uv(uint64(r.StreamRank))
		e.uv(uint64(len(r.Salts)))
		for _, sl := range r.Salts {
			e.u64(sl.Hash)
			e.str(sl.Salt)
		}
		e.uv(uint64(len(r.Skipped)))
		for _, h := range r.Skipped {
			e.u64(h)
		}
	}
}

func (e *encoder) event(re *core.RouterEvent) {
	ev := &re.Event
	e.uv(re.WorkerID)
	e.str(string(re.StorageTier))
	e.uv(ev.ID)
	e.uv(uint64(ev.DPRank))
	e.b = append(e.b, byte(ev.Kind))
	switch ev.Kind {
	case core.EventStored:
		e.optUV(ev.ParentHash)
		e.optUV(ev.StartPosition)
		e.uv(uint64(len(ev.Blocks)))
		for _, blk := range ev.Blocks {
			e.u64(blk.BlockHash)
			e.u64(blk.TokensHash)
			// 0: no multimodal info (nil); n+1: n objects.
			if blk.MMObjects == nil {
				e.uv(0)
				continue
			}
			e.uv(uint64(len(blk.MMObjects)) + 1)
			for _, o := range blk.MMObjects {
				e.u64(o.MMHash)
				e.uv(uint64(len(o.Offsets)))
				for _, off := range o.Offsets {
					e.uv(off[0])
					e.uv(off[1])
				}
			}
		}
	case core.EventRemoved:
		e.uv(uint64(len(ev.BlockHashes)))
		for _, h := range ev.BlockHashes {
			e.u64(h)
		}
	}
}
