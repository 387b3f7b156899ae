package policy

import (
	"container/list"

	"github.com/kvhash/kvhash/core"
)

// approxIndex is llm-d's router-side prefix index: per pod, an LRU of
// block hashes it was sent, bounded by a capacity in blocks.
type approxIndex struct {
	capacity int
	pods     map[core.Worker]*podLRU
}

type podLRU struct {
	order *list.List // front: most recent; values are hashes
	at    map[uint64]*list.Element
}

func newApproxIndex(capacity int) *approxIndex {
	return &approxIndex{capacity: capacity, pods: map[core.Worker]*podLRU{}}
}

// match fills dst (one count per row) as llm-d's matchLongestPrefix
// does: walking the prompt's blocks from the first, stop at the first
// block no pod holds; every pod holding a block counts it. (A pod that
// lost a middle block to its LRU still counts the later ones: upstream's
// quirk.)
func (x *approxIndex) match(dst []int, blocks []uint64, rows []Row) []int {
	dst = append(dst[:0], make([]int, len(rows))...)
	for _, h := range blocks {
		any := false
		for i, r := range rows {
			if pod := x.pods[r.Worker]; pod != nil {
				if _, ok := pod.at[h]; ok {
					dst[i]++
					any = true
				}
			}
		}
		if !any {
			break
		}
	}
	return dst
}

// add records that w was sent blocks: each becomes its most recent,
// the least recent past the capacity are dropped.
func (x *approxIndex) add(blocks []uint64, w core.Worker) {
	pod := x.pods[w]
	if pod == nil {
		pod = &podLRU{order: list.New(), at: map[uint64]*list.Element{}}
		x.pods[w] = pod
	}
	for _, h := range blocks {
		if e, ok := pod.at[h]; ok {
			pod.order.MoveToFront(e)
			continue
		}
		pod.at[h] = pod.order.PushFront(h)
		if pod.order.Len() > x.capacity {
			old := pod.order.Back()
			pod.order.Remove(old)
			delete(pod.at, old.Value.(uint64))
		}
	}
}
