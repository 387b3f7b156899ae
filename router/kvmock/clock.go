package kvmock

import (
	"context"
	"time"
)

// simClock maps wall time to simulated time: simulated seconds run Speedup
// times faster than the wall clock, so a demo can replay minutes of traffic
// in seconds while every reported duration stays in simulated units.
//
// The engine's steps take the model's durations; the driver sleeps each
// one (scaled) and keeps its own simulated time while busy, so timer
// jitter multiplied by a large speedup never shows up in reported times.
type simClock struct {
	start   time.Time
	speedup float64
}

func newSimClock(speedup float64) simClock {
	return simClock{start: time.Now(), speedup: speedup}
}

// now is the simulated time, in seconds since the engine started.
func (c simClock) now() float64 {
	return time.Since(c.start).Seconds() * c.speedup
}

// wallAt is the wall time at which simulated time t is reached.
func (c simClock) wallAt(t float64) time.Time {
	return c.start.Add(time.Duration(t / c.speedup * float64(time.Second)))
}

// sleepUntil waits until simulated time t or until ctx ends.
func (c simClock) sleepUntil(ctx context.Context, t float64) error {
	d := time.Until(c.wallAt(t))
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
