package policy

import (
	"container/list"

	"github.com/kvhash/kvhash/core"
)

// approxIndex is llm-d's router-side prefix index: per pod, an LRU of
// block hashes it was sent, bounded by a capacity in blocks. Beside the
// LRUs, holders maps each hash to the pods holding it (a bit per pod,
// for the first 64 pods), so a match looks each block up once.
type approxIndex struct {
	capacity int
	pods     map[core.Worker]*podLRU
	holders  map[uint64]uint64
	bits     []uint64 // scratch: each row's bit (0: beyond 64)
}

type podLRU struct {
	bit   uint64 // 1 << slot; 0 for pods beyond the 64th
	order *list.List
	at    map[uint64]*list.Element
}

func newApproxIndex(capacity int) *approxIndex {
	return &approxIndex{capacity: capacity, pods: map[core.Worker]*podLRU{}, holders: map[uint64]uint64{}}
}

// match fills dst (one count per row) as llm-d's matchLongestPrefix
// does: walking the prompt's blocks from the first, stop at the first
// block no pod holds; every pod holding a block counts it. (A pod that
// lost a middle block to its LRU still counts the later ones: upstream's
// quirk.)
func (x *approxIndex) match(dst []int, blocks []uint64, rows []Row) []int {
	dst = append(dst[:0], make([]int, len(rows))...)
	x.bits = x.bits[:0]
	var all uint64
	slow := len(x.pods) > 64
	for _, r := range rows {
		var b uint64
		if pod := x.pods[r.Worker]; pod != nil {
			b = pod.bit
		}
		x.bits = append(x.bits, b)
		all |= b
	}
	for _, h := range blocks {
		held := x.holders[h]
		any := held != 0
		if held&all != 0 {
			for i, b := range x.bits {
				if held&b != 0 {
					dst[i]++
				}
			}
		}
		if slow { // pods beyond the 64th: their own maps
			for i, r := range rows {
				if x.bits[i] != 0 {
					continue
				}
				if pod := x.pods[r.Worker]; pod != nil {
					if _, ok := pod.at[h]; ok {
						dst[i]++
						any = true
					}
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
		if n := len(x.pods); n < 64 {
			pod.bit = 1 << n
		}
		x.pods[w] = pod
	}
	for _, h := range blocks {
		if e, ok := pod.at[h]; ok {
			pod.order.MoveToFront(e)
			continue
		}
		pod.at[h] = pod.order.PushFront(h)
		if pod.bit != 0 {
			x.holders[h] |= pod.bit
		}
		if pod.order.Len() > x.capacity {
			old := pod.order.Back()
			pod.order.Remove(old)
			oh := old.Value.(uint64)
			delete(pod.at, oh)
			if m := x.holders[oh] &^ pod.bit; m == 0 {
				delete(x.holders, oh)
			} else {
				x.holders[oh] = m
			}
		}
	}
}
