package ingest

// slab hands out the token and hash slices of one batch from a few large
// allocations instead of one per event. Each batch gets fresh chunks (a
// handler may keep the batch); a chunk is sized from the payload, which
// bounds how many values it can hold.
type slab struct {
	hint int
	u32s []uint32
	u64s []uint64
}

func (s *slab) reset(payloadLen int) {
	s.hint = payloadLen
	s.u32s, s.u64s = nil, nil
}

// emptyU32 keeps "sent as []" apart from "not sent" (nil) at no cost.
var emptyU32 = []uint32{}

func (s *slab) u32(n int) []uint32 {
	if n == 0 {
		return emptyU32
	}
	if n > len(s.u32s) {
		// A token takes 1 to 5 bytes; guess 2 and grow if wrong.
		s.u32s = make([]uint32, max(n, min(s.hint/2, 1<<16), 64))
	}
	out := s.u32s[:n:n]
	s.u32s = s.u32s[n:]
	return out
}

func (s *slab) u64(n int) []uint64 {
	if n > len(s.u64s) {
		// Hashes are few beside tokens (one per block of 16+ tokens).
		s.u64s = make([]uint64, max(n, min(s.hint/32, 1<<13), 16))
	}
	out := s.u64s[:n:n]
	s.u64s = s.u64s[n:]
	return out
}
