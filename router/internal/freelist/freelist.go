// Package freelist keeps buffers for reuse on a latency-critical path.
//
// Unlike sync.Pool, a garbage collection does not empty it: a routing
// decision that had to allocate its buffers again after every collection
// would allocate while the collector marks, and an allocation then may
// make its goroutine assist the collector and wait for the mark to end.
package freelist

// List holds up to its capacity of values; Get and Put never block.
type List[T any] struct{ ch chan T }

// New returns a List that keeps up to n values.
func New[T any](n int) *List[T] { return &List[T]{ch: make(chan T, n)} }

// Get returns a kept value, or false when none is.
func (l *List[T]) Get() (T, bool) {
	select {
	case v := <-l.ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// Put keeps v unless the list is full.
func (l *List[T]) Put(v T) {
	select {
	case l.ch <- v:
	default:
	}
}
