package kvmock

import "sync"

// bufferedBatch is one published batch kept for replay.
type bufferedBatch struct {
	seq     uint64
	payload []byte
}

// batchRing keeps the last n published batches (vLLM's deque with
// maxlen=buffer_steps). The step loop adds, the replay server reads.
type batchRing struct {
	mu    sync.Mutex
	items []bufferedBatch
	start int // index of the oldest
	n     int
}

func newBatchRing(capacity int) *batchRing {
	return &batchRing{items: make([]bufferedBatch, capacity)}
}

func (r *batchRing) add(b bufferedBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n < len(r.items) {
		r.items[(r.start+r.n)%len(r.items)] = b
		r.n++
		return
	}
	r.items[r.start] = b
	r.start = (r.start + 1) % len(r.items)
}

// since copies the batches with seq >= from, oldest first.
func (r *batchRing) since(from uint64) []bufferedBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []bufferedBatch
	for i := range r.n {
		b := r.items[(r.start+i)%len(r.items)]
		if b.seq >= from {
			out = append(out, b)
		}
	}
	return out
}

// next is the seq after the newest batch (0 when none was published).
func (r *batchRing) next() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return 0
	}
	return r.items[(r.start+r.n-1)%len(r.items)].seq + 1
}
