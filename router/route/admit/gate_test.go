package admit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleet is a saturation flag the test sets; in kvrouter it is the
// router's queued prefill.
type fleet struct{ full atomic.Bool }

func (f *fleet) saturated() bool { return f.full.Load() }

func svc(s float64) func() float64 { return func() float64 { return s } }

func TestGateAdmitsAtOnceWithRoom(t *testing.T) {
	var f fleet
	g := NewGate(f.saturated, GateOptions{})
	done, held, err := g.Enter(context.Background(), svc(0.1))
	require.NoError(t, err)
	assert.False(t, held)
	done()
	assert.Zero(t, g.Held())
}

// Held requests are released one at a time, highest ratio (all held
// since the same instant: the shortest) first, each after the previous
// one's done.
func TestGateReleasesByRatioOneAtATime(t *testing.T) {
	var f fleet
	f.full.Store(true)
	var clock atomic.Int64 // seconds after t0
	g := NewGate(f.saturated, GateOptions{Recheck: time.Hour, Now: func() time.Time { return at(float64(clock.Load())) }})
	services := []float64{0.9, 0.1, 0.5}
	order := make(chan float64, len(services))
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, held, err := g.Enter(context.Background(), svc(s))
			if !assert.NoError(t, err) {
				return
			}
			assert.True(t, held)
			order <- s
			done()
		}()
	}
	require.Eventually(t, func() bool { return g.Held() == len(services) }, 5*time.Second, time.Millisecond)
	clock.Store(1)
	f.full.Store(false)
	g.Kick()
	wg.Wait()
	close(order)
	var got []float64
	for s := range order {
		got = append(got, s)
	}
	assert.Equal(t, []float64{0.1, 0.5, 0.9}, got)
}

// While a released request has not routed, nobody else is let through,
// not even a newcomer finding the fleet with room.
func TestGateNewcomersQueueBehindTheHeld(t *testing.T) {
	var f fleet
	f.full.Store(true)
	g := NewGate(f.saturated, GateOptions{Recheck: time.Hour})
	first := make(chan func())
	go func() {
		done, _, err := g.Enter(context.Background(), svc(0.1))
		assert.NoError(t, err)
		first <- done
	}()
	require.Eventually(t, func() bool { return g.Held() == 1 }, 5*time.Second, time.Millisecond)
	f.full.Store(false)
	g.Kick()
	done := <-first // released, not yet routed
	second := make(chan bool)
	go func() {
		d, held, err := g.Enter(context.Background(), svc(0.1))
		assert.NoError(t, err)
		second <- held
		d()
	}()
	require.Eventually(t, func() bool { return g.Held() == 1 }, 5*time.Second, time.Millisecond, "the newcomer waits for the released one")
	done()
	assert.True(t, <-second)
}

func TestGateRefusals(t *testing.T) {
	var f fleet
	f.full.Store(true)
	t.Run("full", func(t *testing.T) {
		g := NewGate(f.saturated, GateOptions{MaxHeld: 1, Recheck: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go g.Enter(ctx, svc(0.1)) //nolint:errcheck // cancelled below
		require.Eventually(t, func() bool { return g.Held() == 1 }, 5*time.Second, time.Millisecond)
		done, _, err := g.Enter(context.Background(), svc(0.1))
		assert.ErrorIs(t, err, ErrFull)
		assert.Nil(t, done)
	})
	t.Run("max wait", func(t *testing.T) {
		g := NewGate(f.saturated, GateOptions{MaxWait: 20 * time.Millisecond, Recheck: time.Hour})
		_, held, err := g.Enter(context.Background(), svc(0.1))
		assert.ErrorIs(t, err, ErrTimeout)
		assert.True(t, held)
		assert.Zero(t, g.Held(), "a request that gave up is not left in the queue")
	})
	t.Run("context", func(t *testing.T) {
		g := NewGate(f.saturated, GateOptions{Recheck: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, _, err := g.Enter(ctx, svc(0.1))
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		assert.Zero(t, g.Held())
	})
}

// Room that appears without a Kick (load that expired) is noticed by the
// held requests' recheck.
func TestGateRecheck(t *testing.T) {
	var f fleet
	f.full.Store(true)
	g := NewGate(f.saturated, GateOptions{Recheck: 5 * time.Millisecond})
	go func() { time.Sleep(20 * time.Millisecond); f.full.Store(false) }()
	done, held, err := g.Enter(context.Background(), svc(0.1))
	require.NoError(t, err)
	assert.True(t, held)
	done()
}

// A request released just as it gives up does not route: its turn goes
// to the next held request.
func TestGateGivingUpHandsTheTurnOn(t *testing.T) {
	var f fleet
	f.full.Store(true)
	var clock atomic.Int64
	g := NewGate(f.saturated, GateOptions{Recheck: time.Hour, Now: func() time.Time { return at(float64(clock.Load())) }})
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, _, err := g.Enter(ctx, svc(0.1)) // the shortest: released first
		first <- err
	}()
	require.Eventually(t, func() bool { return g.Held() == 1 }, 5*time.Second, time.Millisecond)
	second := make(chan bool, 1)
	go func() {
		done, _, err := g.Enter(context.Background(), svc(5))
		assert.NoError(t, err)
		second <- true
		done()
	}()
	require.Eventually(t, func() bool { return g.Held() == 2 }, 5*time.Second, time.Millisecond)
	clock.Store(1)
	f.full.Store(false)
	// Released (as Kick does) but not yet told, when it gives up.
	g.mu.Lock()
	w, _ := g.q.Pop(at(1))
	w.released, g.releasing = true, true
	g.mu.Unlock()
	cancel()
	assert.ErrorIs(t, <-first, context.Canceled)
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the second request was never released")
	}
}
