package core

import "unsafe"

// The tree's runs and segments are slices indexed by id, which grow with
// the index: when one is full, append allocates an array twice as large
// and copies it, under the index's lock. Allocating a large array costs
// the writer its zeroing, its pages' first-touch faults and the garbage
// collector's assist for its bytes, more than the copy; so a slice within
// an eighth of its capacity of full has its next array made by another
// goroutine (appendAhead), and the append that fills it copies into that.

// aheadMin is the smallest capacity whose next array is made ahead.
const aheadMin = 4096

// appendAhead appends v to s as append does, taking the array *next
// brings when s is full and it is ready (else allocating, as append
// would), and asking for the next array once s is nearly full.
func appendAhead[T any](s []T, v T, next *chan []T) []T {
	if n := len(s); n < cap(s) {
		if *next == nil && cap(s) >= aheadMin && n >= cap(s)-cap(s)/8 {
			*next = makeAhead[T](2 * cap(s))
		}
		return append(s, v)
	}
	ch := *next
	*next = nil
	if ch != nil {
		select {
		case a := <-ch:
			if cap(a) > len(s) {
				a = a[:len(s)]
				copy(a, s)
				return append(a, v)
			}
		default:
		}
	}
	return append(s, v)
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
