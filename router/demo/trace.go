package demo

import (
	"io"
	"math/rand/v2"

	"github.com/kvhash/kvhash/internal/mooncake"
)

// TraceBlockTokens is a Mooncake hash_id's size in tokens.
const TraceBlockTokens = mooncake.BlockTokens

// Request is one line of a Mooncake-format trace. Timestamp: arrival,
// milliseconds after the first request (fractions allowed).
type Request = mooncake.Request[float64]

// ReadTrace reads a Mooncake-format trace (one JSON object a line; blank
// lines skipped). A line that does not fit the format is an error naming
// it: a replay of half a trace would mislead.
func ReadTrace(r io.Reader) ([]Request, error) { return mooncake.Read[float64](r) }

// ReadTraceFile reads a trace file.
func ReadTraceFile(path string) ([]Request, error) { return mooncake.ReadFile[float64](path) }

// GenerateTrace makes a small Mooncake-format trace with the shape that
// makes prefix caching pay: sessions whose turns extend a shared system
// prompt and their own history, Poisson arrivals. Deterministic in seed.
func GenerateTrace(n int, seed uint64) []Request {
	return GenerateTraceShape(n, seed, 40)
}

// GenerateTraceShape is GenerateTrace with sessions of at most maxBlocks
// hash ids (smaller prompts: quicker tests).
func GenerateTraceShape(n int, seed uint64, maxBlocks int) []Request {
	rng := rand.New(rand.NewPCG(seed, seed^0xD1B54A32D192ED03))
	const systemPrompts = 4
	type session struct{ ids []uint64 }
	var next uint64 = systemPrompts * 4 // ids 0..15: the system prompts' blocks
	newSession := func() *session {
		sys := uint64(rng.IntN(systemPrompts)) * 4
		s := &session{ids: []uint64{sys, sys + 1}[:1+rng.IntN(2)]}
		return s
	}
	var live []*session
	out := make([]Request, 0, n)
	t := 0.0
	for range n {
		t += rng.ExpFloat64() * 250 // 4 requests a second
		var s *session
		if len(live) < 12 || rng.Float64() < 0.1 {
			s = newSession()
			live = append(live, s)
		} else {
			s = live[rng.IntN(len(live))]
		}
		for range 1 + rng.IntN(2) { // this turn's new blocks
			s.ids = append(s.ids, next)
			next++
		}
		if len(s.ids) > maxBlocks-2 { // a session ends when its context is full
			live = removeSession(live, s)
		}
		ids := append([]uint64(nil), s.ids...)
		out = append(out, Request{
			Timestamp:    float64(int64(t)),
			InputLength:  TraceBlockTokens*(len(ids)-1) + 1 + rng.IntN(TraceBlockTokens),
			OutputLength: 8 + rng.IntN(64),
			HashIDs:      ids,
		})
	}
	return out
}

func removeSession[T comparable](s []T, x T) []T {
	for i, v := range s {
		if v == x {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// WriteTrace writes requests in the trace format.
func WriteTrace(w io.Writer, reqs []Request) error { return mooncake.Write(w, reqs) }

// Expander turns hash ids into token ids: each id is a run of 512 ids
// drawn from a generator seeded by the id, so equal ids give equal tokens
// in every request and every run. Runs are cached (a trace reuses ids).
type Expander struct {
	vocab uint32
	runs  map[uint64][]uint32
}

// firstTokenID keeps the generated ids clear of an engine's special ids.
const firstTokenID = 256

// NewExpander returns an Expander for ids below vocab.
func NewExpander(vocab int) *Expander {
	return &Expander{vocab: uint32(vocab), runs: map[uint64][]uint32{}}
}

func (e *Expander) run(id uint64) []uint32 {
	if r, ok := e.runs[id]; ok {
		return r
	}
	rng := rand.New(rand.NewPCG(id, 0x6B76686173680000)) // "kvhash"
	r := make([]uint32, TraceBlockTokens)
	for i := range r {
		r[i] = firstTokenID + rng.Uint32N(e.vocab-firstTokenID)
	}
	e.runs[id] = r
	return r
}

// Tokens returns a request's prompt: its hash ids' runs, the last cut to
// input_length - 512*(len(hash_ids)-1) tokens. Not safe for concurrent use.
func (e *Expander) Tokens(q Request) []uint32 {
	out := make([]uint32, 0, q.InputLength)
	for i, id := range q.HashIDs {
		r := e.run(id)
		if i == len(q.HashIDs)-1 {
			r = r[:q.InputLength-TraceBlockTokens*i]
		}
		out = append(out, r...)
	}
	return out
}

// Conversations numbers each request's conversation, in order of first
// appearance: a request continues the conversation of the longest
// earlier turn its hash ids extend (all of that turn's ids but its last,
// which a turn's next block may rewrite when it was partial), and starts
// a new one otherwise. Not its first hash_id: a system prompt shared by
// every request would make them all one conversation. A turn's first
// block alone never names a conversation, for the same reason.
// Requests are taken in trace order (a turn follows its predecessor).
func Conversations(reqs []Request) []int {
	// turns: a prefix of hash ids (by its rolling key) that an earlier
	// turn covered whole (or whole but its last id) -> its conversation.
	turns := map[uint64]int{}
	out := make([]int, len(reqs))
	next := 0
	keys := make([]uint64, 0, 64)
	for i, q := range reqs {
		keys = keys[:0]
		var k uint64 = 0x9E3779B97F4A7C15
		for _, id := range q.HashIDs {
			k = mixPrefix(k, id)
			keys = append(keys, k)
		}
		conv := -1
		for d := len(keys); d >= 2 && conv < 0; d-- {
			if c, ok := turns[keys[d-1]]; ok {
				conv = c
			}
		}
		if conv < 0 {
			conv = next
			next++
		}
		out[i] = conv
		for _, d := range []int{len(keys), len(keys) - 1} {
			if d >= 2 {
				turns[keys[d-1]] = conv
			}
		}
	}
	return out
}

// mixPrefix extends a prefix's rolling key by one hash id.
func mixPrefix(k, id uint64) uint64 {
	k ^= id + 0x9E3779B97F4A7C15 + (k << 6) + (k >> 2)
	k ^= k >> 31
	k *= 0xBF58476D1CE4E5B9
	return k ^ k>>29
}

// SampleFamilies keeps one conversation in k (Conversations): whole
// conversations are kept or dropped together, so the reuse within each
// (and of the prompts they share with the others) is as in the full
// trace, at about 1/k of its load. Timestamps are kept: the sample spans
// the trace's time.
func SampleFamilies(reqs []Request, k int) []Request {
	if k <= 1 {
		return reqs
	}
	conv := Conversations(reqs)
	out := make([]Request, 0, len(reqs)/k+1)
	for i, q := range reqs {
		if conv[i]%k == 0 {
			out = append(out, q)
		}
	}
	return out
}
