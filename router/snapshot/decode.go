package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/router/indexer"
)

// decoder reads the payload. The first error sticks: later reads return
// zeros, so the callers need not check after each one. Counts are checked
// against the bytes left before anything is allocated, so a damaged count
// cannot ask for gigabytes.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n > 1 && d.b[n-1] == 0 {
		// A last byte of 0 is an overlong form: one encoding per value,
		// so a decoded snapshot re-encodes to the same bytes.
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32(what string) uint32 {
	v := d.uv()
	if v > math.MaxUint32 {
		d.fail("%s %d out of range", what, v)
		return 0
	}
	return uint32(v)
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated hash")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) flag() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad flag")
	return false
}

func (d *decoder) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a count of items of at least minSize bytes each.
func (d *decoder) count(minSize int) int {
	n := d.uv()
	if d.err == nil && n > uint64(len(d.b)/minSize) {
		d.fail("count %d exceeds the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) optUV() *uint64 {
	if !d.flag() {
		return nil
	}
	v := d.uv()
	return &v
}

func (d *decoder) saved() indexer.Saved {
	var s indexer.Saved
	nw := d.count(9)
	for range nw {
		w := indexer.WorkerSpec{WorkerID: d.uv()}
		for _, f := range []*string{&w.Model, &w.Tenant, &w.Endpoint, &w.ReplayEndpoint, &w.Topic, &w.BaseURL, &w.EngineHash} {
			*f = d.str()
		}
		dp := d.u32("dp_size")
		if dp > 1<<16 {
			d.fail("dp_size %d", dp)
		}
		w.DPSize = int(dp)
		if d.err != nil {
			return s
		}
		s.Workers = append(s.Workers, w)
	}
	ni := d.count(3)
	for range ni {
		is := indexer.IndexState{Key: indexer.ModelKey{Model: d.str(), Tenant: d.str()}}
		ne := d.count(5)
		is.Events = make([]core.RouterEvent, 0, ne)
		for range ne {
			ev := d.event()
			if d.err != nil {
				return s
			}
			is.Events = append(is.Events, ev)
		}
		s.Indexes = append(s.Indexes, is)
	}
	nr := d.count(7)
	for range nr {
		rs := indexer.RankState{Worker: core.Worker{ID: d.uv(), DPRank: d.u32("dp_rank")}}
		rs.HaveSeq = d.flag()
		rs.LastSeq = d.uv()
		rs.StreamRank = d.u32("stream rank")
		ns := d.count(9)
		for range ns {
			rs.Salts = append(rs.Salts, indexer.Salt{Hash: d.u64(), Salt: d.str()})
		}
		nk := d.count(8)
		for range nk {
			rs.Skipped = append(rs.Skipped, d.u64())
		}
		if d.err != nil {
			return s
		}
		s.Ranks = append(s.Ranks, rs)
	}
	return s
}

func (d *decoder) event() core.RouterEvent {
	re := core.RouterEvent{WorkerID: d.uv(), StorageTier: core.StorageTier(d.str())}
	ev := &re.Event
	ev.ID = d.uv()
	ev.DPRank = d.u32("dp_rank")
	ev.Kind = core.EventKind(d.byte1())
	switch ev.Kind {
	case core.EventStored:
		ev.ParentHash = d.optUV()
		ev.StartPosition = d.optUV()
		nb := d.count(17)
		ev.Blocks = make([]core.StoredBlock, 0, nb)
		for range nb {
			blk := core.StoredBlock{BlockHash: d.u64(), TokensHash: d.u64()}
			if mm := d.count(1); mm > 0 {
				blk.MMObjects = make([]core.MMObject, 0, mm-1)
				for range mm - 1 {
					o := core.MMObject{MMHash: d.u64()}
					no := d.count(2)
					for range no {
						o.Offsets = append(o.Offsets, [2]uint64{d.uv(), d.uv()})
					}
					blk.MMObjects = append(blk.MMObjects, o)
				}
			}
			ev.Blocks = append(ev.Blocks, blk)
		}
	case core.EventRemoved:
		nh := d.count(8)
		ev.BlockHashes = make([]uint64, 0, nh)
		for range nh {
			ev.BlockHashes = append(ev.BlockHashes, d.u64())
		}
	case core.EventCleared:
	default:
		d.fail("unknown event kind %d", ev.Kind)
	}
	return re
}
