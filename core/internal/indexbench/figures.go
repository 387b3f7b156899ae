package indexbench

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Figures is one replay's summary, as one JSON line: the form both
// indexstream and bench/dynamo print, so compare can read either.
type Figures struct {
	Impl            string  `json:"impl"`
	Stream          string  `json:"stream"`
	BlockOpsPerS    float64 `json:"block_ops_per_s"`    // stored + removed + routed blocks / time in the index
	ApplyBlocksPerS float64 `json:"apply_blocks_per_s"` // stored + removed blocks / time applying
	ProbeP50Ns      int64   `json:"probe_p50_ns"`       // 64-block query against the final index
	ProbeP99Ns      int64   `json:"probe_p99_ns"`
	RouteP50Ns      int64   `json:"route_p50_ns"` // the routing queries during the replay
	RouteP99Ns      int64   `json:"route_p99_ns"`
	Digest          string  `json:"digest"` // of every query's result (Digest), 16 hex digits
	Pairs           uint64  `json:"pairs"`  // (worker, block) pairs at the end
	BytesPerPair    float64 `json:"bytes_per_pair,omitempty"`
}

// JSON is the figures' one-line form.
func (f Figures) JSON() ([]byte, error) { return json.Marshal(f) }

// FiguresOf summarises a replay.
func FiguresOf(impl, stream string, r StreamResult) Figures {
	f := Figures{
		Impl: impl, Stream: stream,
		ProbeP50Ns: Percentile(r.ProbeNanos, 50), ProbeP99Ns: Percentile(r.ProbeNanos, 99),
		RouteP50Ns: Percentile(r.RouteNanos, 50), RouteP99Ns: Percentile(r.RouteNanos, 99),
		Digest: fmt.Sprintf("%016x", uint64(r.Digest)), Pairs: r.Pairs, BytesPerPair: r.HeapPerPair,
	}
	if r.IndexNanos > 0 {
		f.BlockOpsPerS = float64(r.BlockOps) / (float64(r.IndexNanos) / 1e9)
	}
	if r.ApplyNanos > 0 {
		f.ApplyBlocksPerS = float64(r.ApplyBlocks) / (float64(r.ApplyNanos) / 1e9)
	}
	return f
}

// MedianFigures takes the median of each figure over runs of the same
// implementation and stream (the digest and pairs must agree between
// runs; a run that disagrees makes the digest "varies").
func MedianFigures(runs []Figures) Figures {
	if len(runs) == 0 {
		return Figures{}
	}
	out := runs[0]
	medF := func(get func(Figures) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	medI := func(get func(Figures) int64) int64 {
		v := make([]int64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out.BlockOpsPerS = medF(func(f Figures) float64 { return f.BlockOpsPerS })
	out.ApplyBlocksPerS = medF(func(f Figures) float64 { return f.ApplyBlocksPerS })
	out.BytesPerPair = medF(func(f Figures) float64 { return f.BytesPerPair })
	out.ProbeP50Ns = medI(func(f Figures) int64 { return f.ProbeP50Ns })
	out.ProbeP99Ns = medI(func(f Figures) int64 { return f.ProbeP99Ns })
	out.RouteP50Ns = medI(func(f Figures) int64 { return f.RouteP50Ns })
	out.RouteP99Ns = medI(func(f Figures) int64 { return f.RouteP99Ns })
	for _, r := range runs[1:] {
		if r.Digest != out.Digest {
			out.Digest = "varies"
		}
	}
	return out
}

// PairedRatios returns get(a[i]) / get(b[i]) for each run i: the runs of
// two implementations made one after the other (compare alternates
// them), each pair under the same load. This machine is shared: for
// stretches of a second or so everything on it runs at about two thirds
// of its speed, on either side of a comparison alike, so a ratio of
// medians swings with which side's median run fell in a slow stretch,
// while a pair of adjacent runs mostly shares its stretch and its ratio
// does not move with it.
func PairedRatios(a, b []Figures, get func(Figures) float64) []float64 {
	out := make([]float64, 0, min(len(a), len(b)))
	for i := range min(len(a), len(b)) {
		out = append(out, get(a[i])/get(b[i]))
	}
	return out
}

// MedianRatio is the median of PairedRatios (of an even number, the mean
// of the middle two): the figure compare reports for kvhash against a
// Dynamo tree.
func MedianRatio(a, b []Figures, get func(Figures) float64) float64 {
	v := PairedRatios(a, b, get)
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[n/2]
}
