package eventplane

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// A replica may apply only some models' events (Options.Models): a
// partition of the fleet. Its ordered consumer reads only those models'
// subjects, it takes only their engines' leases, its stream position is
// the last sequence of those subjects, and it restores only snapshots of
// the same partition. Replicas of different partitions share one NATS,
// one stream and one lease bucket; each model needs replicas of its own
// partition (the proxy routes a model's requests to them). Every replica
// of a partition still applies every event of its models: partitions
// divide the fleet's event rate, replicas within one multiply routes.

// partitioned reports whether the replica applies only some models.
func (p *Plane) partitioned() bool { return len(p.opts.Models) > 0 }

// inPartition reports whether the replica applies model's events.
func (p *Plane) inPartition(model string) bool {
	return !p.partitioned() || slices.Contains(p.opts.Models, model)
}

// eventFilters are the subjects the replica consumes.
func (p *Plane) eventFilters() []string {
	if !p.partitioned() {
		return []string{p.opts.eventsFilter()}
	}
	out := make([]string, 0, len(p.opts.Models))
	for _, m := range p.opts.Models {
		out = append(out, p.opts.Prefix+".events."+SubjectToken(m)+".>")
	}
	return out
}

// partitionName labels the replica's snapshots: "" for every model, else
// its models, sorted.
func (p *Plane) partitionName() string {
	ms := slices.Clone(p.opts.Models)
	slices.Sort(ms)
	return strings.Join(ms, ",")
}

// lastSeq is the stream sequence of the last message the replica will
// apply as the stream stands (info): the stream's last, or its models'.
func (p *Plane) lastSeq(ctx context.Context, info *jetstream.StreamInfo) (uint64, error) {
	if !p.partitioned() {
		return info.State.LastSeq, nil
	}
	var last uint64
	for _, f := range p.eventFilters() {
		m, err := p.stream.GetLastMsgForSubject(ctx, f)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return 0, err
		default:
			last = max(last, m.Sequence)
		}
	}
	return last, nil
}
