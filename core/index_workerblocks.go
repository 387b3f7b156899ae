package core

// WorkerBlocks returns how many blocks one rank holds (its tree size, as
// in Stats, named or not); 0 for a rank the index does not know. It
// looks up the one rank under the read lock, where Stats walks them all:
// callers that bound a rank's size check it per store.
func (x *Index) WorkerBlocks(w Worker) uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if wi, ok := x.t.index[w]; ok {
		return x.t.workers[wi].blocks()
	}
	return 0
}

// WorkerViolations returns one rank's violation counts (as in Stats);
// zeros for a rank the index does not know. Like WorkerBlocks, it looks
// up the one rank, for callers that compare counts around one event.
func (x *Index) WorkerViolations(w Worker) [NumViolations]uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if wi, ok := x.t.index[w]; ok {
		return x.t.workers[wi].violations
	}
	return [NumViolations]uint64{}
}
