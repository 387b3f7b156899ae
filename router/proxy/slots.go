package proxy

import (
	"maps"
	"sync"
	"sync/atomic"
)

// engineSlots counts the requests in flight through the proxy to each
// engine against its EngineSlots. The routing decision reads it for every
// candidate and takes a slot after choosing: lock-free, so a decision
// never waits behind the accounting of requests that end (under a
// saturated CPU a lock's waiter is parked, and a parked goroutine waits
// behind every runnable one).
type engineSlots struct {
	limit int64
	mu    sync.Mutex // serializes adding a counter
	// counters: copy-on-write, one counter an engine ever seen (engines
	// are few; a counter is eight bytes).
	counters atomic.Pointer[map[uint64]*atomic.Int64]
}

func newEngineSlots(limit int) *engineSlots {
	s := &engineSlots{limit: int64(limit)}
	s.counters.Store(&map[uint64]*atomic.Int64{})
	return s
}

// counter returns id's counter, adding it on first use.
func (s *engineSlots) counter(id uint64) *atomic.Int64 {
	if c, ok := (*s.counters.Load())[id]; ok {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.counters.Load()
	if c, ok := old[id]; ok {
		return c
	}
	m := maps.Clone(old)
	if m == nil {
		m = map[uint64]*atomic.Int64{}
	}
	c := new(atomic.Int64)
	m[id] = c
	s.counters.Store(&m)
	return c
}

// free reports whether engine id has a free slot now.
func (s *engineSlots) free(id uint64) bool {
	c, ok := (*s.counters.Load())[id]
	return !ok || c.Load() < s.limit
}

// take takes one of id's slots; false when all are taken.
func (s *engineSlots) take(id uint64) bool {
	c := s.counter(id)
	for {
		n := c.Load()
		if n >= s.limit {
			return false
		}
		if c.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give returns a slot take took.
func (s *engineSlots) give(id uint64) { s.counter(id).Add(-1) }

// inUse is id's requests in flight.
func (s *engineSlots) inUse(id uint64) int {
	if c, ok := (*s.counters.Load())[id]; ok {
		return int(c.Load())
	}
	return 0
}

// busy returns the engines with requests in flight, and how many.
func (s *engineSlots) busy() map[uint64]int {
	out := map[uint64]int{}
	for id, c := range *s.counters.Load() {
		if n := c.Load(); n > 0 {
			out[id] = int(n)
		}
	}
	return out
}
