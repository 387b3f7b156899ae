// Package admit is kvrouter's router-side admission queue. When every
// engine already has a step's worth of prefill queued (route.Router's
// Saturated), a new request would only wait inside an engine, first come
// first served, behind prompts it cannot overtake. Held at the router
// instead, it is routed when an engine has room, and the waiting requests
// go by highest response ratio: (wait + service) / service, service being
// the predicted prefill of the request's uncached tokens
// (route.Router's Estimate). Short and mostly cached prompts go first, so
// a saturated fleet serves more of its requests from cache and sooner,
// while a long prompt's ratio grows as it waits, so none starves.
//
// Queue is the ordering (one goroutine: the simulator); Gate is the same
// queue for concurrent callers that block until released (the proxy).
package admit

import (
	"math"
	"time"
)

// DefaultHoldTokens: a request is held while every engine has at least
// this much prefill queued: two steps' token budget of vLLM's V1
// scheduler on large GPUs (max_num_batched_tokens 8192, also Dynamo's
// mocker's), so an engine always has its next steps' prefill in hand
// while the order of the rest is the router's. Measured with kvrouter sim
// (8 engines, 5 seeds, load 1.2): the tenants family's TTFT p90 15.1 s
// and mean 7.5 s at 16384, 16.1 s and 7.9 s at 8192, 16.7 s and 8.1 s at
// 4096, 14.9 s and 7.8 s at 32768; the Mooncake trace's p90 (one seed)
// 33.7, 33.2, 33.2 and 32.6 s.
const DefaultHoldTokens = 16384

// Queue holds values by arrival and predicted service time and pops the
// one of highest response ratio. The zero value is empty and ready. Not
// safe for concurrent use.
type Queue[T any] struct {
	items []item[T]
	seq   uint64
}

type item[T any] struct {
	value    T
	at       time.Time
	serviceS float64
	seq      uint64
}

// minServiceS bounds a predicted service time from below (a request
// whose prefill is predicted to take no time would outrank every other
// the moment it waits).
const minServiceS = 1e-4

// maxServiceS bounds it from above (an infinite one would make every
// ratio NaN).
const maxServiceS = 1e6

// Push adds v, which arrived at at and whose own prefill is predicted to
// take serviceS seconds.
func (q *Queue[T]) Push(v T, at time.Time, serviceS float64) {
	switch {
	case math.IsNaN(serviceS) || serviceS < minServiceS:
		serviceS = minServiceS
	case serviceS > maxServiceS:
		serviceS = maxServiceS
	}
	q.seq++
	q.items = append(q.items, item[T]{value: v, at: at, serviceS: serviceS, seq: q.seq})
}

// Len is the number of values held.
func (q *Queue[T]) Len() int { return len(q.items) }

// Pop removes and returns the value of highest response ratio at now,
// (now - at + service) / service; equal ratios go by arrival, then push
// order. ok is false when the queue is empty.
func (q *Queue[T]) Pop(now time.Time) (v T, ok bool) {
	i := q.best(now)
	if i < 0 {
		return v, false
	}
	return q.removeAt(i), true
}

// Remove drops the first value for which match is true; it reports
// whether one was.
func (q *Queue[T]) Remove(match func(T) bool) bool {
	for i := range q.items {
		if match(q.items[i].value) {
			q.removeAt(i)
			return true
		}
	}
	return false
}

func (q *Queue[T]) best(now time.Time) int {
	best, bestRatio := -1, 0.0
	for i := range q.items {
		it := &q.items[i]
		wait := max(0, now.Sub(it.at).Seconds())
		ratio := (wait + it.serviceS) / it.serviceS
		if best < 0 || ratio > bestRatio || (ratio == bestRatio && q.before(it, &q.items[best])) {
			best, bestRatio = i, ratio
		}
	}
	return best
}

func (q *Queue[T]) before(a, b *item[T]) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}

// removeAt takes item i out, keeping the others in push order (the
// scan's tie-break does not depend on it, but a stable order keeps runs
// reproducible under equal keys).
func (q *Queue[T]) removeAt(i int) T {
	v := q.items[i].value
	copy(q.items[i:], q.items[i+1:])
	var zero item[T]
	q.items[len(q.items)-1] = zero
	q.items = q.items[:len(q.items)-1]
	return v
}
