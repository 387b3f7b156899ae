package indexerbench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Query is one prepared /query call: its JSON body and the answer the
// whole stream implies (matched blocks by engine).
type Query struct {
	Body      []byte
	Want      map[int]int
	BlockSize int // the API answers matched tokens: blocks x this
}

// Queries prepares n /query calls over prompts drawn from the stream
// (deterministic in the stream's seed).
func (st *Stream) Queries(n int) []Query {
	rng := rand.New(rand.NewPCG(st.Spec.Seed, 0x9e7))
	out := make([]Query, 0, n)
	for range n {
		p := st.Prompts[rng.IntN(len(st.Prompts))]
		out = append(out, Query{Body: queryBody(st.Tokens(p)), Want: st.Expected(p), BlockSize: st.Spec.BlockSize})
	}
	return out
}

// SentinelQuery asks for the sentinel: every engine must hold all of it.
func (st *Stream) SentinelQuery() Query {
	want := map[int]int{}
	for e := range st.Spec.Engines {
		want[e] = st.Sentinel.n
	}
	return Query{Body: queryBody(st.SentinelTokens()), Want: want, BlockSize: st.Spec.BlockSize}
}

func queryBody(tokens []uint32) []byte {
	b := []byte(`{"model_name":"` + Model + `","token_ids":[`)
	for i, t := range tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(t), 10)
	}
	return append(b, "]}"...)
}

// queryAnswer is the part of Dynamo's /query answer read here: matched
// tokens by instance id, then by dp_rank (both as JSON object keys).
type queryAnswer struct {
	Scores map[string]map[string]int `json:"scores"`
}

// ask sends q and returns matched blocks by engine (instance id - 1,
// dp_rank 0; zero scores left out).
func ask(ctx context.Context, url string, q Query) (map[int]int, error) {
	code, out, err := postRaw(ctx, url+"/query", q.Body)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/query: %d %.200s", code, out)
	}
	var a queryAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("/query answer %.200s: %w", out, err)
	}
	got := map[int]int{}
	for inst, ranks := range a.Scores {
		id, err := strconv.Atoi(inst)
		if err != nil {
			return nil, fmt.Errorf("/query: instance %q", inst)
		}
		for rank, n := range ranks {
			if rank != "0" {
				return nil, fmt.Errorf("/query: instance %s dp_rank %s", inst, rank)
			}
			if n%q.BlockSize != 0 {
				return nil, fmt.Errorf("/query: instance %s matched %d tokens, not whole blocks", inst, n)
			}
			if n > 0 {
				got[id-1] = n / q.BlockSize
			}
		}
	}
	return got, nil
}

// QueryStats are the latencies of the queries sent during a run.
type QueryStats struct {
	Sent, Failed  int
	P50, P99, Max time.Duration
	Rate          float64 // answered queries per second
	// Slowest are the slowest queries, slowest first, with when they
	// were sent: stalls that recur as the index grows show as a pattern
	// in At.
	Slowest []SlowQuery
}

// SlowQuery is one query's latency and when it was sent, from the start
// of the stream.
type SlowQuery struct {
	At, Took time.Duration
}

// slowestKept is how many of the slowest queries QueryStats keeps.
const slowestKept = 5

// WarmUp asks q once, before the stream: the client's connection and its
// first request's setup (in the client and in the index's server) are not
// what a query during the stream measures. Without it the first query of
// every run, on both sides, was the slowest (up to 0.3 s), sent the
// moment the burst began.
func WarmUp(ctx context.Context, url string, q Query) error {
	if _, err := ask(ctx, url, q); err != nil {
		return fmt.Errorf("warm-up query: %w", err)
	}
	return nil
}

// DriveQueries sends qs round-robin, one at a time, one every 1/rate
// seconds until ctx ends. A late answer delays the next query (it is
// sent at once, no catch-up burst): an index that blocks its queries
// shows as a lower achieved rate as well as a longer latency.
func DriveQueries(ctx context.Context, url string, qs []Query, rate float64) QueryStats {
	interval := time.Duration(float64(time.Second) / rate)
	var lat []time.Duration
	var slow []SlowQuery
	failed := 0
	start := time.Now()
	next := start
	for i := 0; ; i++ {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return summarize(lat, slow, failed, time.Since(start))
			case <-time.After(d):
			}
		} else if ctx.Err() != nil {
			return summarize(lat, slow, failed, time.Since(start))
		}
		sent := time.Now()
		_, err := ask(context.WithoutCancel(ctx), url, qs[i%len(qs)])
		took := time.Since(sent)
		if err != nil {
			failed++
		} else {
			lat = append(lat, took)
			slow = keepSlowest(slow, SlowQuery{At: sent.Sub(start), Took: took})
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
}

// keepSlowest adds q to the slowest queries if it is one of them.
func keepSlowest(slow []SlowQuery, q SlowQuery) []SlowQuery {
	if len(slow) == slowestKept && q.Took <= slow[len(slow)-1].Took {
		return slow
	}
	i, _ := slices.BinarySearchFunc(slow, q, func(a, b SlowQuery) int { return cmp.Compare(b.Took, a.Took) })
	slow = slices.Insert(slow, i, q)
	return slow[:min(len(slow), slowestKept)]
}

func summarize(lat []time.Duration, slow []SlowQuery, failed int, elapsed time.Duration) QueryStats {
	s := QueryStats{Sent: len(lat) + failed, Failed: failed, Slowest: slow}
	if len(lat) == 0 {
		return s
	}
	slices.Sort(lat)
	s.P50 = lat[len(lat)/2]
	s.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	s.Max = lat[len(lat)-1]
	s.Rate = float64(len(lat)) / elapsed.Seconds()
	return s
}

// WaitComplete polls the sentinel every interval until every engine holds
// it (the index has applied every engine's whole stream) and returns when
// it first saw that.
func WaitComplete(ctx context.Context, url string, sentinel Query, interval time.Duration) (time.Time, error) {
	for {
		got, err := ask(ctx, url, sentinel)
		if err == nil && maps.Equal(got, sentinel.Want) {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("index incomplete (sentinel answer %v, err %v): %w", got, err, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// Verify asks every query and counts the answers that differ from what
// the whole stream implies; the first difference is described.
func Verify(ctx context.Context, url string, qs []Query) (wrong int, first string, err error) {
	for i, q := range qs {
		got, err := ask(ctx, url, q)
		if err != nil {
			return wrong, first, fmt.Errorf("verify query %d: %w", i, err)
		}
		if !maps.Equal(got, q.Want) {
			if wrong == 0 {
				first = fmt.Sprintf("query %d: got %v, want %v", i, got, q.Want)
			}
			wrong++
		}
	}
	return wrong, first, nil
}

// PromptQueries prepares a /query call for every prompt of the stream.
func (st *Stream) PromptQueries() []Query {
	out := make([]Query, len(st.Prompts))
	for i, p := range st.Prompts {
		out[i] = Query{Body: queryBody(st.Tokens(p)), Want: st.Expected(p), BlockSize: st.Spec.BlockSize}
	}
	return out
}
