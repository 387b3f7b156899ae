package core

import "math/bits"

// workerSet is the set of workers (interned indexes) holding a node. Most
// nodes are held by one to three workers, which fit inline; larger sets
// move to a bitset in the tree's pool, so the match walk intersects a
// popular prefix held by 128 workers with two word ANDs per block.
type workerSet struct {
	n uint32    // members
	w [3]uint32 // n <= 3: the members, ascending; n > 3: w[0] is the bitset's pool index
}

// bitsetPool holds the bitsets of large worker sets, recycling freed ones.
type bitsetPool struct {
	sets [][]uint64
	free []uint32
}

func (p *bitsetPool) alloc(words int) uint32 {
	if k := len(p.free); k > 0 {
		id := p.free[k-1]
		p.free = p.free[:k-1]
		if cap(p.sets[id]) >= words {
			p.sets[id] = p.sets[id][:words]
		} else {
			p.sets[id] = make([]uint64, words)
		}
		return id
	}
	p.sets = append(p.sets, make([]uint64, words))
	return uint32(len(p.sets) - 1)
}

func (p *bitsetPool) release(id uint32) {
	clear(p.sets[id])
	p.sets[id] = p.sets[id][:0]
	p.free = append(p.free, id)
}

func (s *workerSet) bitset(p *bitsetPool) []uint64 { return p.sets[s.w[0]] }

func (s *workerSet) has(p *bitsetPool, i uint32) bool {
	switch s.n {
	case 0:
		return false
	case 1:
		return s.w[0] == i
	case 2:
		return s.w[0] == i || s.w[1] == i
	case 3:
		return s.w[0] == i || s.w[1] == i || s.w[2] == i
	}
	b := p.sets[s.w[0]]
	word := int(i >> 6)
	return word < len(b) && b[word]&(1<<(i&63)) != 0
}

// add inserts i, which must not be a member.
func (s *workerSet) add(p *bitsetPool, i uint32) {
	switch {
	case s.n < 3:
		j := int(s.n)
		for j > 0 && s.w[j-1] > i {
			s.w[j] = s.w[j-1]
			j--
		}
		s.w[j] = i
	case s.n == 3:
		hi := max(s.w[2], i)
		id := p.alloc(int(hi>>6) + 1)
		b := p.sets[id]
		for _, m := range [4]uint32{s.w[0], s.w[1], s.w[2], i} {
			b[m>>6] |= 1 << (m & 63)
		}
		s.w = [3]uint32{id}
	default:
		b := p.sets[s.w[0]]
		word := int(i >> 6)
		if word >= len(b) {
			if word < cap(b) {
				b = b[:word+1]
			} else {
				nb := make([]uint64, word+1, word+1+word/4)
				copy(nb, b)
				b = nb
			}
			p.sets[s.w[0]] = b
		}
		b[word] |= 1 << (i & 63)
	}
	s.n++
}

// remove deletes i, which must be a member.
func (s *workerSet) remove(p *bitsetPool, i uint32) {
	switch {
	case s.n <= 3:
		j := 0
		for s.w[j] != i {
			j++
		}
		copy(s.w[j:], s.w[j+1:s.n])
		s.w[s.n-1] = 0
	case s.n == 4:
		id := s.w[0]
		b := p.sets[id]
		b[i>>6] &^= 1 << (i & 63)
		var w [3]uint32
		k := 0
		for wi, word := range b {
			for word != 0 {
				w[k] = uint32(wi<<6 | bits.TrailingZeros64(word))
				k++
				word &= word - 1
			}
		}
		p.release(id)
		s.w = w
	default:
		b := p.sets[s.w[0]]
		b[i>>6] &^= 1 << (i & 63)
	}
	s.n--
}

// appendMembers appends the members in ascending order.
func (s *workerSet) appendMembers(p *bitsetPool, dst []uint32) []uint32 {
	if s.n <= 3 {
		return append(dst, s.w[:s.n]...)
	}
	for wi, word := range p.sets[s.w[0]] {
		for word != 0 {
			dst = append(dst, uint32(wi<<6|bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return dst
}

// release returns the set's bitset, if any, to the pool and empties it.
func (s *workerSet) release(p *bitsetPool) {
	if s.n > 3 {
		p.release(s.w[0])
	}
	*s = workerSet{}
}
