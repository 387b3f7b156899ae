package eventplane

import (
	"context"
	"time"
)

// The stream must hold more than the events of one snapshot interval: a
// replica restarts from the newest snapshot plus the stream after it.
// When the byte limit, not the age, decides what the stream keeps, the
// span it covers shrinks as the event rate grows. After each snapshot the
// replica checks the span and says how many bytes the stream needs.

// retentionFactor: the stream should hold this many snapshot intervals
// (one for the interval itself, the rest for a snapshot that failed or a
// replica that restarts slowly).
const retentionFactor = 3

// neededStreamBytes returns the byte limit the stream needs to hold
// retentionFactor snapshot intervals at the rate it holds now, or 0 when
// it holds them (or is not full: the age limit decides).
func neededStreamBytes(bytes, maxBytes uint64, span, interval time.Duration) uint64 {
	if maxBytes == 0 || bytes < maxBytes*9/10 || span <= 0 || interval <= 0 {
		return 0
	}
	if span >= retentionFactor*interval {
		return 0
	}
	rate := float64(bytes) / span.Seconds() // bytes per second
	return uint64(rate * (retentionFactor * interval).Seconds())
}

// checkRetentionSpan logs when the stream's byte limit holds less than
// retentionFactor snapshot intervals of events.
func (p *Plane) checkRetentionSpan() {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	info, err := p.stream.Info(ctx)
	if err != nil {
		return
	}
	span := info.State.LastTime.Sub(info.State.FirstTime)
	p.streamSpan.Store(int64(span))
	need := neededStreamBytes(info.State.Bytes, uint64(max(info.Config.MaxBytes, 0)), span, p.opts.SnapshotInterval)
	if need == 0 {
		return
	}
	p.log.Error("kvrouter: the event stream's byte limit holds too little: a restarting replica may find its gap gone and rebuild every engine",
		"holds", span.String(), "snapshot_interval", p.opts.SnapshotInterval.String(), "stream_bytes", info.State.Bytes,
		"stream_max_bytes", info.Config.MaxBytes, "needed_max_bytes", need,
		"fix", "raise stream_max_bytes (nats stream edit "+p.opts.streamName()+" --max-bytes) or shorten the snapshot interval")
}
