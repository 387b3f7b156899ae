package route

// Go maps and slices keep the memory of the most entries they ever held:
// a burst of long prompts (a million tokens each: 60,000 blocks a route)
// would keep its load table's gigabyte after the burst is over. The
// table's maps are rebuilt at their size once they have shrunk to a
// quarter of their peak, which costs O(entries) once per such shrink:
// amortized O(1) a delete.

// shrinkMin: maps up to this many entries at their peak are never
// rebuilt (their memory is small).
const shrinkMin = 1024

// peak tracks the most entries a map held since it was last rebuilt.
type peak int

// grew records the map's size after an insert.
func (p *peak) grew(n int) {
	if n > int(*p) {
		*p = peak(n)
	}
}

// shrunk reports whether a map of n entries should be rebuilt, and when
// so resets the peak to n.
func (p *peak) shrunk(n int) bool {
	if int(*p) <= shrinkMin || n > int(*p)/4 {
		return false
	}
	*p = peak(n)
	return true
}

// rebuilt returns a new map with m's entries, sized for them.
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
