package admit

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestQueueOrder(t *testing.T) {
	type push struct {
		name     string
		atS      float64
		serviceS float64
	}
	tests := []struct {
		name  string
		push  []push
		nowS  float64
		order []string
	}{
		{"equal waits: shortest first", []push{{"long", 0, 1}, {"short", 0, 0.1}, {"mid", 0, 0.5}}, 1, []string{"short", "mid", "long"}},
		{"a long one that waited outranks a short newcomer", []push{{"long", 0, 1}, {"short", 9.5, 0.1}}, 10,
			// long: (10+1)/1 = 11; short: (0.5+0.1)/0.1 = 6
			[]string{"long", "short"}},
		{"a short newcomer outranks a long one that waited little", []push{{"long", 1.5, 1}, {"short", 1.9, 0.1}}, 2,
			// long: 1.5; short: 2
			[]string{"short", "long"}},
		{"equal ratios go by arrival", []push{{"b", 1, 0.2}, {"a", 0, 0.4}}, 2,
			// b: (1+0.2)/0.2 = 6; a: (2+0.4)/0.4 = 6
			[]string{"a", "b"}},
		{"equal everything goes by push order", []push{{"first", 0, 0.3}, {"second", 0, 0.3}}, 1, []string{"first", "second"}},
		{"a service of zero or NaN is the floor, not a division by zero", []push{{"nan", 0, math.NaN()}, {"zero", 0, 0}, {"slow", 0, 5}}, 0, []string{"nan", "zero", "slow"}},
		{"an infinite service still pops", []push{{"inf", 0, math.Inf(1)}}, 1, []string{"inf"}},
		{"arrivals after now wait nothing (a clock step back): ratios 1, by arrival", []push{{"future", 5, 0.1}, {"now", 1, 1}}, 1, []string{"now", "future"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q Queue[string]
			for _, p := range tc.push {
				q.Push(p.name, at(p.atS), p.serviceS)
			}
			require.Equal(t, len(tc.push), q.Len())
			var got []string
			for {
				v, ok := q.Pop(at(tc.nowS))
				if !ok {
					break
				}
				got = append(got, v)
			}
			assert.Equal(t, tc.order, got)
			assert.Zero(t, q.Len())
		})
	}
}

func TestQueueRemove(t *testing.T) {
	var q Queue[int]
	for i := range 5 {
		q.Push(i, t0, float64(i+1))
	}
	assert.True(t, q.Remove(func(v int) bool { return v == 0 }))
	assert.False(t, q.Remove(func(v int) bool { return v == 0 }), "removed once")
	v, ok := q.Pop(t0)
	require.True(t, ok)
	assert.Equal(t, 1, v, "the shortest left")
	assert.Equal(t, 3, q.Len())
}

// A long request is not starved: however many short ones keep arriving,
// its ratio grows with its wait until it is first.
func TestQueueLongRequestIsNotStarved(t *testing.T) {
	var q Queue[string]
	q.Push("long", t0, 2)
	now := t0
	for i := range 1000 {
		q.Push("short", now, 0.05)
		v, _ := q.Pop(now)
		if v == "long" {
			// (wait + 2) / 2 passed a fresh short one's (0 + 0.05) / 0.05 = 1
			// at once, but shorter ones that waited compete: it must come
			// before its wait is a few of its own service times.
			assert.Less(t, now.Sub(t0).Seconds(), 10.0, "popped after %d shorts", i)
			return
		}
		now = now.Add(50 * time.Millisecond)
	}
	t.Fatal("the long request was never popped")
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 200, 0, 7})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var q Queue[int]
		n := 0
		for i, op := range ops {
			now := at(float64(i) / 10)
			if op%3 == 0 {
				_, ok := q.Pop(now)
				assert.Equal(t, n > 0, ok)
				if ok {
					n--
				}
				continue
			}
			q.Push(i, at(float64(op%7)), float64(op)/50-1) // negative, zero and positive services
			n++
		}
		assert.Equal(t, n, q.Len())
	})
}
