package demo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// TraceBlockTokens is a Mooncake hash_id's size in tokens.
const TraceBlockTokens = 512

// Request is one line of a Mooncake-format trace.
type Request struct {
	// Timestamp: arrival, milliseconds after the first request.
	Timestamp    float64  `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// ReadTrace reads a Mooncake-format trace (one JSON object a line; blank
// lines skipped). A line that does not fit the format is an error naming
// it: a replay of half a trace would mislead.
func ReadTrace(r io.Reader) ([]Request, error) {
	var out []Request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var q Request
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		if err := q.validate(); err != nil {
			return nil, fmt.Errorf("trace line %d: %w", line, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the trace: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the trace has no requests")
	}
	return out, nil
}

func (q Request) validate() error {
	switch {
	case len(q.HashIDs) == 0:
		return fmt.Errorf("no hash_ids")
	case q.InputLength <= TraceBlockTokens*(len(q.HashIDs)-1) || q.InputLength > TraceBlockTokens*len(q.HashIDs):
		return fmt.Errorf("input_length %d does not fit %d hash_ids of %d tokens", q.InputLength, len(q.HashIDs), TraceBlockTokens)
	case q.OutputLength < 0 || q.Timestamp < 0:
		return fmt.Errorf("negative output_length or timestamp")
	}
	return nil
}

// ReadTraceFile reads a trace file.
func ReadTraceFile(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTrace(f)
}

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
func WriteTrace(w io.Writer, reqs []Request) error {
	enc := json.NewEncoder(w)
	for _, q := range reqs {
		if err := enc.Encode(q); err != nil {
			return err
		}
	}
	return nil
}

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

// SampleFamilies keeps the requests whose first hash_id is a multiple of
// k: whole prefix families (a conversation's turns, the users of one
// system prompt) are kept or dropped together, so the reuse within each
// family is as in the full trace, at 1/k of its load. Timestamps are
// kept: the sample spans the trace's time.
func SampleFamilies(reqs []Request, k int) []Request {
	if k <= 1 {
		return reqs
	}
	out := make([]Request, 0, len(reqs)/k+1)
	for _, q := range reqs {
		if q.HashIDs[0]%uint64(k) == 0 {
			out = append(out, q)
		}
	}
	return out
}
