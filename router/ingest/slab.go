package ingest

// slab hands out the token and hash slices of one batch from a few large
// allocations instead of one per event. Each batch gets fresh chunks (a
// handler may keep the batch); a chunk is sized from the bytes left in
// the payload, which bound how many values can follow.
type slab struct {
	u32s []uint32
	u64s []uint64
}

func (s *slab) reset() { s.u32s, s.u64s = nil, nil }

// emptyU32 keeps "sent as []" apart from "not sent" (nil) at no cost.
var (
	emptyU32 = []uint32{}
	emptyU64 = []uint64{}
)

// u32 returns n token slots. left is the payload bytes not yet read: a
// token takes 1 to 5 bytes (3 to 5 for a real vocabulary) and tokens are
// most of a payload, so left/4 is a close guess of the tokens to come.
func (s *slab) u32(n, left int) []uint32 {
	if n == 0 {
		return emptyU32
	}
	if n > len(s.u32s) {
		s.u32s = make([]uint32, max(n, min(left/4, 1<<16)))
	}
	out := s.u32s[:n:n]
	s.u32s = s.u32s[n:]
	return out
}

// u64 returns n hash slots; hashes are few beside tokens (one per block
// of 16 or more tokens).
func (s *slab) u64(n, left int) []uint64 {
	if n == 0 {
		return emptyU64
	}
	if n > len(s.u64s) {
		s.u64s = make([]uint64, max(n, min(left/64, 1<<12)))
	}
	out := s.u64s[:n:n]
	s.u64s = s.u64s[n:]
	return out
}
