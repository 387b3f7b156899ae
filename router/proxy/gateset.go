package proxy

import "sync"

// gateSet is a proxy's gates by key, each made on first use: the holding
// gates by model (hold.go) and the slot gates by engine (slotgate.go).
// The zero value is empty and ready.
type gateSet[K comparable, G any] struct {
	mu    sync.Mutex
	gates map[K]*G
}

// get returns key's gate, made by mk when it has none yet.
func (s *gateSet[K, G]) get(key K, mk func() *G) *G {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gates[key]
	if g == nil {
		if s.gates == nil {
			s.gates = map[K]*G{}
		}
		g = mk()
		s.gates[key] = g
	}
	return g
}

// find returns key's gate, nil when none was made.
func (s *gateSet[K, G]) find(key K) *G {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gates[key]
}

// sum adds f of every gate (held while f runs: f must not block).
func (s *gateSet[K, G]) sum(f func(*G) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.gates {
		n += f(g)
	}
	return n
}
