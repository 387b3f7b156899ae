package demo

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvhash/kvhash/router/proxy"
)

// A request sent later than lagLimit behind its due time lowers the
// speed from there on, unless the speed is fixed; the lag is measured
// either way.
func TestScheduleLowersTheSpeedWhenTheHostFallsBehind(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, fixed := range []bool{false, true} {
		s := newSchedule(80, fixed, t0)
		s.sent(800, t0.Add(10*time.Millisecond)) // due at 10 ms: on time
		assert.Equal(t, 80.0, s.speed)
		s.sent(1600, t0.Add(20*time.Millisecond+time.Second)) // due at 20 ms: a second late
		assert.InDelta(t, 1000, s.lagsMs[1], 1)
		if fixed {
			assert.Equal(t, 80.0, s.speed, "a fixed speed stays")
			continue
		}
		assert.Equal(t, 56.0, s.speed, "lowered")
		// From there on, due times run at the new speed from that request.
		assert.Equal(t, t0.Add(20*time.Millisecond+time.Second+time.Duration(560/56.0*float64(time.Millisecond))), s.due(2160))
	}
}

// The table says when the host could not keep the schedule, and at what
// speed the replay ran instead; and how many 429s were waited out.
func TestScheduleNote(t *testing.T) {
	ok := Result{Policy: proxy.PolicyKV, AskedSpeed: 80, Speed: 80, LagP90Ms: 3, LagMaxMs: 40}
	assert.Empty(t, scheduleNote(ok))
	slow := Result{Policy: proxy.PolicyRandom, AskedSpeed: 80, Speed: 39.2, LagP90Ms: 900, LagMaxMs: 2500, Retries: 12}
	note := scheduleNote(slow)
	assert.Contains(t, note, "random: the host could not keep the schedule")
	assert.Contains(t, note, "39.2x instead of 80x")
	assert.Contains(t, note, "12 answers were 429")
	var b strings.Builder
	WriteTable(&b, []Result{ok, slow})
	assert.Contains(t, b.String(), note)
}

// Failed requests are counted by what they got, so a user sees whether
// the fleet, kvrouter or the connection failed them.
func TestFailuresAreNamedByWhatTheyGot(t *testing.T) {
	outs := []outcome{
		{ok: true, status: 200, haveUsage: true},
		{status: 503, errCode: "no_worker"},
		{status: 503, errCode: "no_worker"},
		{status: 502},
		{status: 200},
		{},
		{errCode: connectionError(fmt.Errorf("read: %w", syscall.ECONNRESET))},
	}
	r := summarize(proxy.PolicyKV, outs)
	assert.Equal(t, 6, r.Failed)
	assert.Equal(t, map[string]int{"503 no_worker": 2, "502": 1, "cut short": 1, "no answer": 1, "no answer: connection reset": 1}, r.FailedBy)
	assert.Contains(t, scheduleNote(r), "kvrouter: 6 failed (1 502, 2 503 no_worker, 1 cut short, 1 no answer, 1 no answer: connection reset)")
}

// The demo points at the dashboard only while it is up.
func TestNextSteps(t *testing.T) {
	assert.Contains(t, nextSteps("http://127.0.0.1:8090", true), "the dashboard http://127.0.0.1:8090/")
	gone := nextSteps("http://127.0.0.1:8090", false)
	assert.NotContains(t, gone, "http://127.0.0.1:8090")
	assert.Contains(t, gone, "--keep-running")
}
