package serve

import (
	"math"
	"strconv"
	"sync"

	"github.com/kvhash/kvhash/router/route"
)

// The route path's JSON by hand: a prompt's token ids and a decision's
// candidates are most of its bytes, and encoding/json's reflection per
// element costs more than the routing itself. The rest of the API uses
// encoding/json.

// tokenList is a JSON array of u32 token ids, parsed without reflection.
// Absent or null leaves it nil (a missing field); [] is empty, not nil.
type tokenList []uint32

// UnmarshalJSON parses [1, 2, ...]: every element a JSON integer in
// 0..2^32-1 (no fraction, no exponent, no sign), whitespace anywhere.
// encoding/json has already checked the value is well-formed JSON. The
// ids go into *tl's memory when it has some.
func (tl *tokenList) UnmarshalJSON(data []byte) error {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == 'n' { // null
		*tl = nil
		return nil
	}
	if i >= len(data) || data[i] != '[' {
		return badRequest("invalid_type", "field token_ids: want an array of integers in 0..4294967295")
	}
	out := (*tl)[:0] // a buffer the caller lends (fastRouteRequestInto)
	if out == nil {
		out = make([]uint32, 0, len(data)/4)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		*tl = out
		return nil
	}
	for {
		// One pass a digit; the limit and leading-zero checks once a
		// number (10 digits cannot overflow a uint64).
		start := i
		var v uint64
		for i < len(data) {
			d := data[i] - '0'
			if d > 9 {
				break
			}
			v = v*10 + uint64(d)
			i++
		}
		if n := i - start; n > 10 || v > math.MaxUint32 {
			return badToken(len(out), data[start:numberEnd(data, i)])
		}
		if i == start || (data[start] == '0' && i-start > 1) {
			return badToken(len(out), data[start:numberEnd(data, i)])
		}
		out = append(out, uint32(v))
		if i < len(data) && data[i] == ',' { // the common "1,2,3"
			if i++; i < len(data) && data[i]-'0' > 9 {
				i = skipSpace(data, i)
			}
			continue
		}
		if end := numberEnd(data, i); end != i {
			return badToken(len(out)-1, data[start:end])
		}
		i = skipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			*tl = out
			return nil
		}
		return badRequest("invalid_type", "field token_ids: want an array of integers in 0..4294967295")
	}
}

func badToken(i int, lit []byte) error {
	if len(lit) == 0 {
		return badRequest("invalid_type", "field token_ids[%d]: not an integer; want 0..4294967295", i)
	}
	return badRequest("invalid_type", "field token_ids[%d]: %s does not fit a token id (0..4294967295)", i, lit)
}

// numberEnd is where the JSON value at i ends (the next , ] or space).
func numberEnd(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ',', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// appendDecision writes a route.Decision as encoding/json would (the same
// field names and number forms), without reflection. Without explain, a
// candidate's cost terms (prefill_blocks, decode_blocks) are left out:
// with a large fleet they are a third of the answer's bytes.
func appendDecision(b []byte, d *route.Decision, explain bool) []byte {
	b = append(b, `{"worker_id":`...)
	b = strconv.AppendUint(b, d.WorkerID, 10)
	b = append(b, `,"dp_rank":`...)
	b = strconv.AppendUint(b, uint64(d.DPRank), 10)
	b = append(b, `,"overlap_blocks":`...)
	b = strconv.AppendUint(b, uint64(d.OverlapBlocks), 10)
	b = append(b, `,"cost":`...)
	b = appendFloat(b, d.Cost)
	b = append(b, `,"request_id":`...)
	b = strconv.AppendQuote(b, d.RequestID)
	b = append(b, `,"candidates":[`...)
	for i := range d.Candidates {
		c := &d.Candidates[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"worker_id":`...)
		b = strconv.AppendUint(b, c.WorkerID, 10)
		b = append(b, `,"dp_rank":`...)
		b = strconv.AppendUint(b, uint64(c.DPRank), 10)
		b = append(b, `,"overlap_blocks":`...)
		b = strconv.AppendUint(b, uint64(c.OverlapBlocks), 10)
		b = append(b, `,"cost":`...)
		b = appendFloat(b, c.Cost)
		b = append(b, `,"state":"`...)
		b = append(b, c.State.String()...)
		b = append(b, '"')
		if explain {
			b = append(b, `,"prefill_blocks":`...)
			b = appendFloat(b, c.PrefillBlocks)
			b = append(b, `,"decode_blocks":`...)
			b = strconv.AppendUint(b, c.DecodeBlocks, 10)
			if c.TTFT != (route.TTFTTerms{}) {
				b = appendTTFT(b, &c.TTFT)
			}
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// appendTTFT writes a candidate's predicted-TTFT terms (the field order
// of route.TTFTTerms, as encoding/json writes them).
func appendTTFT(b []byte, t *route.TTFTTerms) []byte {
	b = append(b, `,"ttft":{"queue_s":`...)
	b = appendFloat(b, t.QueueS)
	b = append(b, `,"prefill_s":`...)
	b = appendFloat(b, t.PrefillS)
	b = append(b, `,"decode_s":`...)
	b = appendFloat(b, t.DecodeS)
	b = append(b, `,"admit_s":`...)
	b = appendFloat(b, t.AdmitS)
	b = append(b, `,"total_s":`...)
	b = appendFloat(b, t.TotalS)
	b = append(b, `,"own_work_s":`...)
	b = appendFloat(b, t.OwnWorkS)
	b = append(b, `,"overhead_s":`...)
	b = appendFloat(b, t.OverheadS)
	b = append(b, `,"work_weight":`...)
	b = appendFloat(b, t.WorkWeight)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(t.CachedTokens), 10)
	b = append(b, `,"queued_tokens":`...)
	b = strconv.AppendUint(b, t.QueuedTokens, 10)
	b = append(b, `,"tokens_per_s":`...)
	b = appendFloat(b, t.TokensPerS)
	b = append(b, `,"speed_factor":`...)
	b = appendFloat(b, t.SpeedFactor)
	b = append(b, `,"observations":`...)
	b = strconv.AppendUint(b, t.Observations, 10)
	b = append(b, `,"decode_factor":`...)
	b = appendFloat(b, t.DecodeFactor)
	b = append(b, `,"waiting_requests":`...)
	b = appendFloat(b, t.WaitingRequests)
	b = append(b, `,"wait_s_per_request":`...)
	b = appendFloat(b, t.WaitSPerRequest)
	return append(b, '}')
}

// appendFloat formats a finite float as encoding/json does: plain decimal
// between 1e-6 and 1e21, exponent form (e-7, not e-07) outside.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...) // never produced by the cost; not an error mid-stream
	}
	abs := math.Abs(f)
	if abs < 1<<53 && f == math.Trunc(f) && !(f == 0 && math.Signbit(f)) {
		return strconv.AppendInt(b, int64(f), 10) // the common case, without float formatting
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
