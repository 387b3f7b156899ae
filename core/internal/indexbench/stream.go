package indexbench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// A stream file is a recording made self-contained, so that another
// implementation (Dynamo's Rust trees, bench/dynamo) can replay exactly the
// operations the Go benchmark replays without knowing about prompts or
// traces. Everything is little-endian:
//
//	header  "KVSTRM1\n", u32 workers, u32 block size, u32 capacity
//	        (0: no evictions), u32 probe passes
//	records until EOF, each a kind byte then:
//	  'M' routing query   u32 n, n x u64 local hash
//	  'S' stored event    u32 worker, u8 has parent, u64 parent (0 when
//	                      absent), u32 n, n x (u64 block hash, u64 tokens hash)
//	  'R' removed event   u32 worker, u32 n, n x u64 block hash
//	  'P' probe query     u32 n, n x u64 local hash (after every event:
//	                      timed against the final index, passes times)
//
// Workers are (worker id, dp rank 0); event ids are the record numbers.
const streamMagic = "KVSTRM1\n"

// Record kinds of a stream file.
const (
	RecMatch   = 'M'
	RecStored  = 'S'
	RecRemoved = 'R'
	RecProbe   = 'P'
)

// StreamHeader describes a stream file.
type StreamHeader struct {
	Workers     uint32
	BlockSize   uint32
	Capacity    uint32 // blocks per worker; 0 when the workers never evict
	ProbePasses uint32
}

// StreamRecord is one record; Local is set for queries, Blocks for stores
// (pairs of block hash, tokens hash), Hashes for removals.
type StreamRecord struct {
	Kind      byte
	Worker    uint32
	HasParent bool
	Parent    uint64
	Local     []uint64
	Blocks    [][2]uint64
	Hashes    []uint64
}

// Stream is a whole stream file in memory.
type Stream struct {
	Header  StreamHeader
	Records []StreamRecord
}

// ProbeBlocks is the length of the probe queries: the "64-block match"
// latency figure.
const ProbeBlocks = 64

// BuildStream turns a recording into a stream: its operations, then one
// probe of the first ProbeBlocks blocks of every prompt that long.
func BuildStream(prompts []Prompt, rec *Recording, blockSize, capacity, probePasses int) *Stream {
	s := &Stream{Header: StreamHeader{
		Workers: uint32(rec.Workers), BlockSize: uint32(blockSize),
		Capacity: uint32(capacity), ProbePasses: uint32(probePasses),
	}}
	for i := range rec.Ops {
		op := &rec.Ops[i]
		switch op.Kind {
		case OpMatch:
			s.Records = append(s.Records, StreamRecord{Kind: RecMatch, Local: prompts[op.Prompt].Local[op.Start:op.End]})
		case OpRemoved:
			s.Records = append(s.Records, StreamRecord{Kind: RecRemoved, Worker: op.Worker, Hashes: op.Removed})
		case OpStored:
			pr := &prompts[op.Prompt]
			r := StreamRecord{Kind: RecStored, Worker: op.Worker}
			if op.Start > 0 {
				r.HasParent, r.Parent = true, pr.Seq[op.Start-1]
			}
			for j := op.Start; j < op.End; j++ {
				r.Blocks = append(r.Blocks, [2]uint64{pr.Seq[j], pr.Local[j]})
			}
			s.Records = append(s.Records, r)
		}
	}
	for i := range prompts {
		if len(prompts[i].Local) >= ProbeBlocks {
			s.Records = append(s.Records, StreamRecord{Kind: RecProbe, Local: prompts[i].Local[:ProbeBlocks]})
		}
	}
	return s
}

// WriteStream writes s in the stream file format.
func WriteStream(w io.Writer, s *Stream) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var b [8]byte
	u32 := func(v uint32) { binary.LittleEndian.PutUint32(b[:4], v); bw.Write(b[:4]) }
	u64 := func(v uint64) { binary.LittleEndian.PutUint64(b[:], v); bw.Write(b[:]) }
	bw.WriteString(streamMagic)
	u32(s.Header.Workers)
	u32(s.Header.BlockSize)
	u32(s.Header.Capacity)
	u32(s.Header.ProbePasses)
	for i := range s.Records {
		r := &s.Records[i]
		bw.WriteByte(r.Kind)
		switch r.Kind {
		case RecMatch, RecProbe:
			u32(uint32(len(r.Local)))
			for _, h := range r.Local {
				u64(h)
			}
		case RecStored:
			u32(r.Worker)
			if r.HasParent {
				bw.WriteByte(1)
			} else {
				bw.WriteByte(0)
			}
			u64(r.Parent)
			u32(uint32(len(r.Blocks)))
			for _, p := range r.Blocks {
				u64(p[0])
				u64(p[1])
			}
		case RecRemoved:
			u32(r.Worker)
			u32(uint32(len(r.Hashes)))
			for _, h := range r.Hashes {
				u64(h)
			}
		default:
			return fmt.Errorf("write stream: record %d: unknown kind %q", i, r.Kind)
		}
	}
	return bw.Flush()
}

// maxStreamCount bounds one record's length so a corrupt file gives an
// error, not a huge allocation.
const maxStreamCount = 1 << 24

// preallocMax bounds what a count allocates before its values are read:
// a short file claiming a long record fails after reading, not before.
const preallocMax = 1 << 12

// ReadStream reads a stream file.
func ReadStream(r io.Reader) (*Stream, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var b [8]byte
	var err error
	read := func(n int) []byte {
		if err == nil {
			_, err = io.ReadFull(br, b[:n])
		}
		return b[:n]
	}
	u32 := func() uint32 { return binary.LittleEndian.Uint32(read(4)) }
	u64 := func() uint64 { return binary.LittleEndian.Uint64(read(8)) }
	count := func() int {
		n := u32()
		if err == nil && n > maxStreamCount {
			err = fmt.Errorf("count %d is over %d", n, maxStreamCount)
		}
		if err != nil {
			return 0
		}
		return int(n)
	}
	if string(read(8)) != streamMagic || err != nil {
		return nil, fmt.Errorf("read stream: not a stream file (want %q first)", streamMagic)
	}
	s := &Stream{}
	s.Header = StreamHeader{Workers: u32(), BlockSize: u32(), Capacity: u32(), ProbePasses: u32()}
	if err != nil {
		return nil, fmt.Errorf("read stream header: %w", err)
	}
	for i := 0; ; i++ {
		kind, e := br.ReadByte()
		if errors.Is(e, io.EOF) {
			return s, nil
		}
		rec := StreamRecord{Kind: kind}
		switch kind {
		case RecMatch, RecProbe:
			n := count()
			rec.Local = make([]uint64, 0, min(n, preallocMax))
			for j := 0; j < n && err == nil; j++ {
				rec.Local = append(rec.Local, u64())
			}
		case RecStored:
			rec.Worker = u32()
			rec.HasParent = read(1)[0] == 1
			rec.Parent = u64()
			n := count()
			rec.Blocks = make([][2]uint64, 0, min(n, preallocMax))
			for j := 0; j < n && err == nil; j++ {
				rec.Blocks = append(rec.Blocks, [2]uint64{u64(), u64()})
			}
		case RecRemoved:
			rec.Worker = u32()
			n := count()
			rec.Hashes = make([]uint64, 0, min(n, preallocMax))
			for j := 0; j < n && err == nil; j++ {
				rec.Hashes = append(rec.Hashes, u64())
			}
		default:
			return nil, fmt.Errorf("read stream: record %d: unknown kind %q", i, kind)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("read stream: record %d (%q): %w", i, kind, err)
		}
		s.Records = append(s.Records, rec)
	}
}

// ReadStreamFile reads the stream file at path.
func ReadStreamFile(path string) (*Stream, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ReadStream(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WriteStreamFile writes s to path.
func WriteStreamFile(path string, s *Stream) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteStream(f, s); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
