package admit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slotsOp is one call on a Slots[string]: send the named request, or end
// one sent request (end is true).
type slotsOp struct {
	send string
	end  bool
}

func send(name string) slotsOp { return slotsOp{send: name} }

var end = slotsOp{end: true}

func TestSlots(t *testing.T) {
	tests := []struct {
		name           string
		maxSeqs, batch int
		ops            []slotsOp
		wantNow        []string // the requests that went to the engine, in order
		wantSent       int
		wantHeld       int
	}{
		{"below the limit every request goes at once", 3, 2,
			[]slotsOp{send("a"), send("b"), send("c")},
			[]string{"a", "b", "c"}, 3, 0},
		{"a full engine's requests wait", 2, 1,
			[]slotsOp{send("a"), send("b"), send("c"), send("d")},
			[]string{"a", "b"}, 2, 2},
		{"they wait until batch slots are free, then go together in routing order", 3, 2,
			[]slotsOp{send("a"), send("b"), send("c"), send("d"), send("e"), send("f"), end, end},
			[]string{"a", "b", "c", "d", "e"}, 3, 1},
		{"one end frees one slot: below the batch nothing goes", 3, 2,
			[]slotsOp{send("a"), send("b"), send("c"), send("d"), end},
			[]string{"a", "b", "c"}, 2, 1},
		{"a newcomer does not overtake the waiting ones even with a free slot", 3, 2,
			[]slotsOp{send("a"), send("b"), send("c"), send("d"), end, send("e")},
			[]string{"a", "b", "c"}, 2, 2},
		{"no more go than there are free slots", 4, 2,
			[]slotsOp{send("a"), send("b"), send("c"), send("d"), send("e"), send("f"), send("g"), end, end},
			[]string{"a", "b", "c", "d", "e", "f"}, 4, 1},
		{"batch 0 counts as 1: each free slot goes", 1, 0,
			[]slotsOp{send("a"), send("b"), end},
			[]string{"a", "b"}, 1, 0},
		{"an engine of fewer slots than the batch sends when it is empty", 2, 8,
			[]slotsOp{send("a"), send("b"), send("c"), send("d"), send("e"), end, end},
			[]string{"a", "b", "c", "d"}, 2, 1},
		{"max seqs 0: unbounded", 0, 8,
			[]slotsOp{send("a"), send("b"), send("c")},
			[]string{"a", "b", "c"}, 3, 0},
		{"an end with nothing sent does not go negative", 2, 1,
			[]slotsOp{end, send("a"), send("b"), send("c")},
			[]string{"a", "b"}, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSlots[string](tt.maxSeqs, tt.batch)
			var now []string
			for _, op := range tt.ops {
				if op.end {
					now = s.Ended(now)
					continue
				}
				full := s.Full()
				if s.Send(op.send) {
					assert.False(t, full, "%s went while Full said it would wait", op.send)
					now = append(now, op.send)
				} else {
					assert.True(t, full, "%s waited while Full said it would go", op.send)
				}
			}
			assert.Equal(t, tt.wantNow, now)
			assert.Equal(t, tt.wantSent, s.Sent())
			assert.Equal(t, tt.wantHeld, s.Held())
		})
	}
}

// TestSlotsNeverOverfillTheEngine drives a full engine with ends and
// arrivals interleaved and checks the engine never has more than its
// slots, and that every request goes exactly once.
func TestSlotsNeverOverfillTheEngine(t *testing.T) {
	const maxSeqs, batch = 16, 4
	s := NewSlots[int](maxSeqs, batch)
	var inEngine []int
	wentTimes := map[int]int{}
	next := 0
	for round := range 200 {
		for range round%3 + 1 { // arrivals
			if s.Send(next) {
				inEngine = append(inEngine, next)
				wentTimes[next]++
			}
			next++
		}
		if round%2 == 0 && len(inEngine) > 0 { // an end
			inEngine = inEngine[1:]
			for _, v := range s.Ended(nil) {
				inEngine = append(inEngine, v)
				wentTimes[v]++
			}
		}
		assert.LessOrEqual(t, len(inEngine), maxSeqs)
		assert.Equal(t, len(inEngine), s.Sent())
	}
	for len(inEngine) > 0 { // drain
		inEngine = inEngine[1:]
		for _, v := range s.Ended(nil) {
			inEngine = append(inEngine, v)
			wentTimes[v]++
		}
	}
	assert.Equal(t, 0, s.Held())
	assert.Len(t, wentTimes, next)
	for v, n := range wentTimes {
		assert.Equal(t, 1, n, "request %d", v)
	}
}

func TestSlotsRemove(t *testing.T) {
	s := NewSlots[string](1, 1)
	for _, v := range []string{"a", "b", "c", "d"} {
		s.Send(v)
	}
	assert.True(t, s.Remove(func(v string) bool { return v == "c" }))
	assert.False(t, s.Remove(func(v string) bool { return v == "c" }), "gone already")
	assert.False(t, s.Remove(func(v string) bool { return v == "a" }), "a was sent, not held")
	assert.Equal(t, 2, s.Held())
	assert.Equal(t, []string{"b"}, s.Ended(nil))
	assert.Equal(t, []string{"d"}, s.Ended(nil))
}

// The gate lets the first maxSeqs callers in at once, holds the rest,
// and lets them go a batch at a time as requests end; a caller whose
// context ends while held leaves the queue and is not counted.
func TestSlotGate(t *testing.T) {
	const maxSeqs, batch = 3, 2
	g := NewSlotGate(maxSeqs, batch)
	ctx := context.Background()
	for range maxSeqs {
		require.NoError(t, g.Enter(ctx))
	}
	entered := make(chan int, 8)
	for i := range 3 {
		go func() {
			if assert.NoError(t, g.Enter(ctx)) {
				entered <- i
			}
		}()
		require.Eventually(t, func() bool { return g.Held() == i+1 }, 5*time.Second, time.Millisecond)
	}
	leaving, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- g.Enter(leaving) }()
	require.Eventually(t, func() bool { return g.Held() == 4 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	assert.Equal(t, 3, g.Held(), "the caller that gave up left the queue")

	g.Ended() // one slot free: below the batch
	assert.Never(t, func() bool { return len(entered) > 0 }, 50*time.Millisecond, 5*time.Millisecond)
	g.Ended() // two free: the first two held go, in order
	got := []int{<-entered, <-entered}
	assert.ElementsMatch(t, []int{0, 1}, got)
	assert.Equal(t, maxSeqs, g.Sent())
	assert.Equal(t, 1, g.Held())
	g.Ended()
	g.Ended()
	assert.Equal(t, 2, <-entered)
	assert.Equal(t, 2, g.Sent())
	assert.Zero(t, g.Held())
}
