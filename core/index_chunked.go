package core

import "unsafe"

// The tree's runs and segments are arrays indexed by id, which grow with
// the index. A slice that doubles copies itself, under the index's lock:
// at hundreds of thousands of runs, a copy of tens of megabytes, which
// held the lock for half a millisecond and more while every query waited.
// So they are chunked: fixed chunks of chunkLen elements, which never
// move once made, behind a short list of them (the spine, which grows by
// appending a pointer, a few kilobytes at most). An element's address is
// two loads, the spine's entry, mostly in cache, then the element. The
// first chunk starts small and doubles up to chunkLen, so that an empty
// index stays small (a WASM instance holds tens of thousands); a pointer
// into it is valid only until the next push, as a slice's would be.
// The next chunk is made by another goroutine, which touches its pages,
// once the last is nearly full: allocating it under the lock would cost
// the writer its zeroing, its pages' first-touch faults and the garbage
// collector's assist for its bytes.
type chunked[T any] struct {
	chunks [][]T // every one chunkLen long, but the first, which grows to it
	n      int
	// next brings the next chunk, made off the lock (makeAhead); nil when
	// none was asked for.
	next chan []T
}

const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits
)

// at returns element i (i < len).
func (c *chunked[T]) at(i uint32) *T {
	return &c.chunks[i>>chunkBits][i&(chunkLen-1)]
}

func (c *chunked[T]) len() int { return c.n }

// push appends v and returns its index.
func (c *chunked[T]) push(v T) uint32 {
	i := c.n
	k, off := i>>chunkBits, i&(chunkLen-1)
	switch {
	case k == 0:
		if len(c.chunks) == 0 {
			c.chunks = append(c.chunks, nil)
		}
		c.chunks[0] = append(c.chunks[0], v)
	case off == 0:
		c.chunks = append(c.chunks, c.takeChunk())
		c.chunks[k][0] = v
	default:
		c.chunks[k][off] = v
	}
	if off == chunkLen-chunkLen/8 && c.next == nil {
		c.next = makeAhead[T](chunkLen)
	}
	c.n++
	return uint32(i)
}

// takeChunk returns the chunk made ahead when it is ready, else a new one.
func (c *chunked[T]) takeChunk() []T {
	ch := c.next
	c.next = nil
	if ch != nil {
		select {
		case a := <-ch:
			return a
		default:
		}
	}
	return make([]T, chunkLen)
}

// makeAhead makes an array of n zero values in another goroutine, which
// writes to each of its pages, and returns where it will be.
func makeAhead[T any](n int) chan []T {
	ch := make(chan []T, 1)
	go func() {
		a := make([]T, n)
		var zero T
		step := max(1, 4096/int(unsafe.Sizeof(zero)))
		for i := 0; i < len(a); i += step {
			a[i] = zero // fault the page in
		}
		ch <- a
	}()
	return ch
}
