package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kvhash/kvhash/router/proxy"
)

// outcome is what one replayed request measured.
type outcome struct {
	ok                  bool
	prompt, cached      int
	ttftMs, routeUs     float64
	worker              string
	status              int
	haveUsage, haveTTFT bool
	retries             int           // 429s before this answer
	retryAfter          time.Duration // a 429's Retry-After
	errCode             string        // a failed answer's OpenAI error code
}

// requestBody is one trace request as a streaming completion with token
// ids (usage asked for: it carries the cached tokens).
func requestBody(model string, tokens []uint32, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": model, "prompt": tokens, "max_tokens": max(maxTokens, 1), "stream": true,
		"stream_options": map[string]bool{"include_usage": true},
	})
	return b
}

// maxRetryWait bounds how long a request is retried on 429s.
const maxRetryWait = 2 * time.Minute

// sendRetrying is send, again after each 429 (every engine at its limit)
// once its Retry-After has passed, as a well-behaved client does: the
// retries are counted, the request fails only if the fleet stays full
// for maxRetryWait.
func sendRetrying(ctx context.Context, hc *http.Client, url string, pol proxy.Policy, body []byte) outcome {
	deadline := time.Now().Add(maxRetryWait)
	retries := 0
	for {
		o := send(ctx, hc, url, pol, body)
		o.retries = retries
		if o.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			return o
		}
		retries++
		select {
		case <-time.After(o.retryAfter):
		case <-ctx.Done():
			return o
		}
	}
}

// send replays one request through kvrouter's proxy under a policy.
func send(ctx context.Context, hc *http.Client, url string, pol proxy.Policy, body []byte) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return outcome{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proxy.PolicyHeader, string(pol))
	resp, err := hc.Do(req)
	if err != nil {
		return outcome{errCode: connectionError(err)}
	}
	defer resp.Body.Close()
	o := outcome{status: resp.StatusCode, worker: resp.Header.Get(proxy.HeaderWorker)}
	o.routeUs, _ = strconv.ParseFloat(resp.Header.Get(proxy.HeaderRouteUs), 64)
	if v := resp.Header.Get("X-Kvmock-Ttft-Ms"); v != "" {
		o.ttftMs, _ = strconv.ParseFloat(v, 64)
		o.haveTTFT = true
	}
	if resp.StatusCode != http.StatusOK {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			o.retryAfter = time.Duration(max(secs, 0)) * time.Second
		}
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e) == nil {
			o.errCode = e.Error.Code
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return o
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	done := false
	for sc.Scan() {
		line, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(line) == "[DONE]" {
			done = true
			continue
		}
		if !bytes.Contains(line, []byte(`"usage"`)) {
			continue
		}
		var u struct {
			Usage *struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &u) == nil && u.Usage != nil {
			o.prompt, o.haveUsage = u.Usage.PromptTokens, true
			if u.Usage.PromptTokensDetails != nil {
				o.cached = u.Usage.PromptTokensDetails.CachedTokens
			}
		}
	}
	o.ok = done && o.haveUsage && sc.Err() == nil
	return o
}

// progress is a replay's live counters.
type progress struct {
	sent, done, failed atomic.Int64
	prompt, cached     atomic.Int64
	retries            atomic.Int64 // 429s retried
}

func (p *progress) hitRate() float64 {
	if n := p.prompt.Load(); n > 0 {
		return float64(p.cached.Load()) / float64(n)
	}
	return 0
}

// schedule paces a replay: request i is due at its timestamp divided by
// the speed, from the replay's start. It measures each request's lag
// behind its due time (the host's, not the engines': answers never hold
// the sender). When the lag passes lagLimit and the speed is not fixed,
// the host cannot keep the schedule: the speed is lowered (x0.7) from
// that request on.
type schedule struct {
	speed, asked float64
	fixed        bool
	anchor       time.Time // wall time of trace time base
	base         float64   // trace ms
	lagsMs       []float64
	lowered      int
}

// lagLimit: a request this late means the host is behind the schedule.
const lagLimit = 500 * time.Millisecond

func newSchedule(speed float64, fixed bool, start time.Time) *schedule {
	return &schedule{speed: speed, asked: speed, fixed: fixed, anchor: start}
}

func (s *schedule) due(ts float64) time.Time {
	return s.anchor.Add(time.Duration((ts - s.base) / s.speed * float64(time.Millisecond)))
}

// sent records that the request of trace time ts went out at now.
func (s *schedule) sent(ts float64, now time.Time) {
	lag := max(0, now.Sub(s.due(ts)))
	s.lagsMs = append(s.lagsMs, float64(lag)/float64(time.Millisecond))
	if lag > lagLimit && !s.fixed {
		s.speed *= 0.7
		s.anchor, s.base = now, ts
		s.lowered++
	}
}

// replay sends every request at its (compressed) arrival time and waits
// for all answers. at(i) runs before request i is sent (the scenario's
// hook); it may block.
func replay(ctx context.Context, hc *http.Client, url string, pol proxy.Policy, reqs []Request, bodies [][]byte,
	sched *schedule, prog *progress, at func(i int)) []outcome {
	out := make([]outcome, len(reqs))
	var wg sync.WaitGroup
	for i, q := range reqs {
		if at != nil {
			at(i)
		}
		if d := time.Until(sched.due(q.Timestamp)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		sched.sent(q.Timestamp, time.Now())
		prog.sent.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := sendRetrying(ctx, hc, url, pol, bodies[i])
			out[i] = o
			prog.retries.Add(int64(o.retries))
			if o.ok {
				prog.prompt.Add(int64(o.prompt))
				prog.cached.Add(int64(o.cached))
			} else {
				prog.failed.Add(1)
			}
			prog.done.Add(1)
		}()
	}
	wg.Wait()
	return out
}

// Result is one policy's row of the table.
type Result struct {
	Policy        proxy.Policy
	Requests      int
	Failed        int
	PromptTokens  int64
	CachedTokens  int64
	HitRate       float64
	PrefillTokens int64 // prompt tokens computed (not cached)
	TTFTMeanMs    float64
	TTFTP90Ms     float64
	RouteP50Us    float64
	RouteP99Us    float64
	Violations    uint64
	Quarantines   uint64
	// Retries: 429s (every engine at its limit) the replay waited out.
	Retries int
	// FailedBy: the failed requests by what they got: an HTTP status
	// ("503"), "no answer" (the connection failed) or "cut short" (a 200
	// whose stream ended without usage or [DONE]).
	FailedBy map[string]int
	// The schedule: the speed asked and the speed the replay ended at
	// (lower when the host could not keep the schedule), and how late
	// requests went out (p90, max).
	AskedSpeed, Speed  float64
	LagP90Ms, LagMaxMs float64
	States             string // the workers' states at the end
	Workers            []proxy.DashboardWorker
	Transitions        []Transition
	Wall               time.Duration
}

func summarize(pol proxy.Policy, outs []outcome) Result {
	r := Result{Policy: pol, Requests: len(outs)}
	var ttft, route []float64
	for _, o := range outs {
		if !o.ok {
			r.Failed++
			if r.FailedBy == nil {
				r.FailedBy = map[string]int{}
			}
			r.FailedBy[failureKind(o)]++
		} else {
			r.PromptTokens += int64(o.prompt)
			r.CachedTokens += int64(o.cached)
		}
		if o.haveTTFT && o.ok {
			ttft = append(ttft, o.ttftMs)
		}
		if o.status != 0 && o.worker != "" {
			route = append(route, o.routeUs)
		}
		r.Retries += o.retries
	}
	r.PrefillTokens = r.PromptTokens - r.CachedTokens
	if r.PromptTokens > 0 {
		r.HitRate = float64(r.CachedTokens) / float64(r.PromptTokens)
	}
	r.TTFTMeanMs = mean(ttft)
	r.TTFTP90Ms = quantile(ttft, 0.9)
	r.RouteP50Us = quantile(route, 0.5)
	r.RouteP99Us = quantile(route, 0.99)
	return r
}

// connectionError names why a request got no answer, without the
// addresses and ports that make each error's text unique.
func connectionError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed before an answer"
	}
	return "connection error"
}

// failureKind names what a failed request got (Result.FailedBy).
func failureKind(o outcome) string {
	switch {
	case o.status == 0 && o.errCode != "":
		return "no answer: " + o.errCode
	case o.status == 0:
		return "no answer"
	case o.status == http.StatusOK:
		return "cut short"
	case o.errCode != "":
		return strconv.Itoa(o.status) + " " + o.errCode
	default:
		return strconv.Itoa(o.status)
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// quantile is the nearest-rank q-quantile.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
