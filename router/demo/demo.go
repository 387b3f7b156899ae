// Package demo is `kvrouter demo` (what `make run` runs): kvrouter and a
// fleet of kvmock engines on this machine, a Mooncake-format trace
// replayed through kvrouter's proxy once per routing policy, and the
// table that shows what KV-aware routing buys. docs/guides/demo.md
// explains the set-up and how to read the table.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kvhash/kvhash/router/proxy"
)

// Options configure a demo run.
type Options struct {
	Trace     []Request // the requests, already subsampled
	TraceName string    // shown in the output
	Engines   int
	Engine    EngineConfig
	// Speedup compresses the trace's arrivals; the engines run their
	// simulated time at the same factor, so load stays as in the trace.
	Speedup float64
	// FixedSpeed keeps Speedup when the host cannot keep the schedule;
	// false lowers it (the table says so).
	FixedSpeed bool
	Policies   []proxy.Policy
	// UnstableEngine >= 0 restarts that engine with a new random root a
	// third into kvrouter's run, and as a fixed engine at two thirds (the
	// baselines do not read the index: their runs stay clean).
	UnstableEngine int
	Launcher       Launcher
	Listen         string // kvrouter's address
	Logger         *slog.Logger
	Out            io.Writer // progress and the table
	TTY            bool      // progress as one line updated in place
	// Replicas > 1 runs that many kvrouter replicas on an embedded event
	// plane behind one address (StartReplicas); 0 or 1: one kvrouter.
	Replicas int
	// Hold runs between the policies' runs and before kvrouter stops
	// (--keep-running waits there); nil returns at once.
	Hold func(r *Router)
	// Gateway "envoy" replays kvrouter's policy through Envoy and
	// kvrouter's endpoint picker (EnvoyBin), the baselines as before.
	Gateway, EnvoyBin string
}

// Run runs the demo and returns one Result per policy.
func Run(ctx context.Context, o Options) ([]Result, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := RouterConfig(o.Listen, o.Engine.BlockSize)
	if o.Gateway != "" {
		cfg.EPP.Listen = "127.0.0.1:0"
	}
	// The proxy sends an engine what it runs and a queue as long; the
	// rest waits in the admission queue, long enough that a replay's
	// burst waits rather than fails (a 429 is retried after it).
	cfg.Proxy.MaxNumSeqs, cfg.Proxy.EngineQueue = o.Engine.MaxRunning, 4*o.Engine.MaxRunning
	cfg.Proxy.AdmissionQueue, cfg.Proxy.AdmissionTimeout = 2048, 30*time.Second
	rt, err := StartReplicas(cfg, o.Replicas, log)
	if err != nil {
		return nil, err
	}
	defer rt.Stop()
	var gw *gateway
	if o.Gateway != "" {
		if gw, err = startGateway(ctx, o, rt); err != nil {
			return nil, err
		}
		defer gw.stop()
		fmt.Fprintf(o.Out, "gateway: Envoy at %s asks kvrouter's endpoint picker (%s) where each of kvrouter's requests goes; the baselines go through the proxy\n",
			gw.url, rt.Server.EPPAddr())
	}
	// Connections bounded too: the requests beyond what the proxy holds
	// wait in this client, not in descriptors (kvrouter runs in this
	// process: each connection is two).
	conns := o.Engines*(cfg.Proxy.MaxNumSeqs+cfg.Proxy.EngineQueue) + cfg.Proxy.AdmissionQueue
	hc := replayClient(conns, cfg.Limits.IdleTimeout)
	defer hc.CloseIdleConnections()
	api := &client{base: rt.URL, http: hc, token: rt.AdminToken}
	fmt.Fprintf(o.Out, "kvrouter %s (dashboard: %s/), %d kvmock engines, trace %s: %d requests at %gx\n",
		rt.URL, rt.URL, o.Engines, o.TraceName, len(o.Trace), o.Speedup)
	if o.Replicas > 1 {
		fmt.Fprintf(o.Out, "kvrouter runs as %d replicas on an embedded NATS event plane; requests go to them in turn\n", o.Replicas)
	}

	exp := NewExpander(128256)
	bodies := make([][]byte, len(o.Trace))
	for i, q := range o.Trace {
		bodies[i] = requestBody(o.Engine.Model, exp.Tokens(q), q.OutputLength)
	}

	var results []Result
	var last *fleet
	var tokenizeNote string
	for pi, pol := range o.Policies {
		if last != nil {
			last.stop(ctx, api)
		}
		f, err := startFleet(ctx, o, api, uint64(pi+1)*100)
		if err != nil {
			return results, err
		}
		last = f
		if pi == 0 {
			// What a text prompt costs over token ids, measured on the
			// first fleet before its run; then its caches and the
			// proxy's figures start from nothing again.
			tokenizeNote = tokenizeCost(ctx, o, hc, rt.URL)
			if err := f.resetCaches(ctx, hc); err != nil {
				return results, err
			}
			rt.Server.Proxy().Stats().Reset()
		}
		res, err := runPolicy(ctx, o, rt, api, hc, f, pol, bodies, policyURL(rt, gw, pol))
		if err != nil {
			f.stop(ctx, api)
			return results, err
		}
		results = append(results, res)
		if ctx.Err() != nil {
			break
		}
	}
	rt.Server.Proxy().Stats().SetNote("done")
	fmt.Fprintln(o.Out)
	WriteTable(o.Out, results)
	if tokenizeNote != "" {
		fmt.Fprintln(o.Out, tokenizeNote)
	}
	fmt.Fprint(o.Out, nextSteps(rt.URL, o.Hold != nil))
	if o.Hold != nil {
		o.Hold(rt)
	}
	if last != nil {
		last.stop(context.Background(), api)
	}
	return results, ctx.Err()
}

// nextSteps is what the demo suggests after its table: the dashboard
// and the API while they are up (holding: --keep-running), else how to
// keep them up, since they stop with the demo.
func nextSteps(url string, holding bool) string {
	if holding {
		return fmt.Sprintf("\nNext: the dashboard %s/ , Prometheus metrics %s/metrics , the workers %s/v1/workers ,\n"+
			"      docs/guides/demo.md (this demo) and docs/api/router.md (the API).\n", url, url, url)
	}
	return "\nkvrouter and the fleet stop now: --keep-running leaves them up to look at the dashboard, /metrics and\n" +
		"/v1/workers; docs/guides/demo.md (this demo) and docs/api/router.md (the API).\n"
}

// fleet is one policy's engines.
type fleet struct {
	o       Options
	baseID  uint64
	mu      sync.Mutex
	engines []Engine
}

func startFleet(ctx context.Context, o Options, api *client, baseID uint64) (*fleet, error) {
	f := &fleet{o: o, baseID: baseID}
	for i := range o.Engines {
		e, err := o.Launcher.Start(ctx, fmt.Sprintf("engine-%d", i), o.Engine, Addrs{})
		if err != nil {
			f.stop(ctx, api)
			return nil, err
		}
		f.engines = append(f.engines, e)
		if err := api.register(ctx, baseID+uint64(i), o.Engine.Model, e.Addrs()); err != nil {
			f.stop(ctx, api)
			return nil, fmt.Errorf("registering engine %d: %w", i, err)
		}
	}
	return f, nil
}

func (f *fleet) stop(ctx context.Context, api *client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range f.engines {
		_ = api.unregister(ctx, f.baseID+uint64(i))
		_ = e.Stop()
	}
	f.engines = nil
}

// restart stops engine i and starts it again at the same addresses.
func (f *fleet) restart(ctx context.Context, api *client, i int, unstable bool) error {
	hc := api.http
	f.mu.Lock()
	e := f.engines[i]
	f.mu.Unlock()
	// Drain first: its health check fails, kvrouter takes it out of
	// rotation, the requests it runs finish.
	_ = setEngineHealth(ctx, hc, e.Addrs(), false)
	id := f.baseID + uint64(i)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if d, err := api.dashboard(ctx); err == nil && drained(d, id) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.Stop(); err != nil {
		return err
	}
	cfg := f.o.Engine
	cfg.Unstable = unstable
	ne, err := f.o.Launcher.Start(ctx, fmt.Sprintf("engine-%d", i), cfg, e.Addrs())
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.engines[i] = ne
	f.mu.Unlock()
	if !unstable {
		warmUp(ctx, hc, api, f.o.Engine.Model, ne.Addrs(), i, id)
	}
	return nil
}

// warmUp sends a restarted engine short prompts of its own, as an
// operator's warm-up would, until kvrouter has verified its new block ids
// (or 10 s pass): their root stores are what the ids are verified from,
// and a quarantined engine gets little routed traffic to verify them
// with (it scores by load only). One prompt at a time, because the
// router's subscription to the new process may not be up yet: a PUB
// socket drops what it publishes before.
func warmUp(ctx context.Context, hc *http.Client, api *client, model string, a Addrs, engine int, id uint64) {
	c := client{base: a.BaseURL(), http: hc}
	deadline := time.Now().Add(10 * time.Second)
	for k := 0; time.Now().Before(deadline) && ctx.Err() == nil; k++ {
		if d, err := api.dashboard(ctx); err == nil && verified(d, id) {
			return
		}
		prompt := make([]uint32, 64)
		for j := range prompt {
			prompt[j] = uint32(100_000 + 10_000*engine + 64*k + j)
		}
		body := map[string]any{"model": model, "prompt": prompt, "max_tokens": 1}
		_ = c.do(ctx, http.MethodPost, "/v1/completions", body, nil)
		time.Sleep(200 * time.Millisecond)
	}
}

// verified reports whether kvrouter has verified a worker's block ids.
func verified(d proxy.Dashboard, id uint64) bool {
	for _, w := range d.Workers {
		if w.WorkerID == id {
			return strings.HasPrefix(w.EngineHash, "verified")
		}
	}
	return false
}

func runPolicy(ctx context.Context, o Options, rt *Router, api *client, hc *http.Client, f *fleet, pol proxy.Policy, bodies [][]byte, url string) (Result, error) {
	stats := rt.Server.Proxy().Stats()
	stats.SetNote(fmt.Sprintf("replaying %s under %s", o.TraceName, pol))
	var prog progress
	start := time.Now()
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		showProgress(o, pol, &prog, start, stopProgress)
	}()
	watchDone := make(chan struct{})
	stopWatch := make(chan struct{})
	var transitions []Transition
	go func() {
		defer close(watchDone)
		transitions = watchStates(ctx, o, api, pol, stopWatch)
	}()

	n := len(o.Trace)
	var scenario, unstableUp sync.WaitGroup
	at := func(i int) {
		if pol != proxy.PolicyKV || o.UnstableEngine < 0 || o.UnstableEngine >= o.Engines {
			return
		}
		switch i {
		case n / 3:
			scenario.Add(1)
			unstableUp.Add(1)
			go func() {
				defer scenario.Done()
				defer unstableUp.Done()
				logf(o, "[%s] engine %d (worker %d) restarts with --unstable: a new random root for its block ids", pol, o.UnstableEngine, f.baseID+uint64(o.UnstableEngine))
				if err := f.restart(ctx, api, o.UnstableEngine, true); err != nil {
					logf(o, "[%s] restart failed: %v", pol, err)
				}
			}()
		case 2 * n / 3:
			// The fix comes once kvrouter has caught the unstable engine
			// (or after 20 s): the run shows both transitions.
			scenario.Add(1)
			go func() {
				defer scenario.Done()
				unstableUp.Wait()
				id := f.baseID + uint64(o.UnstableEngine)
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					if d, err := api.dashboard(ctx); err == nil && caught(d, id) {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				logf(o, "[%s] engine %d restarts fixed (a stable hash seed): kvrouter should take it back", pol, o.UnstableEngine)
				if err := f.restart(ctx, api, o.UnstableEngine, false); err != nil {
					logf(o, "[%s] restart failed: %v", pol, err)
				}
			}()
		}
	}
	sched := newSchedule(o.Speedup, o.FixedSpeed, start)
	outs := replay(ctx, hc, url, pol, o.Trace, bodies, sched, &prog, at)
	scenario.Wait()
	if pol == proxy.PolicyKV && o.UnstableEngine >= 0 {
		// Let the quarantine settle so the table shows the recovery.
		waitRecovered(ctx, api, 6*time.Second)
	}
	close(stopProgress)
	<-progressDone
	close(stopWatch)
	<-watchDone
	res := summarize(pol, outs)
	res.Wall = time.Since(start)
	res.AskedSpeed, res.Speed = sched.asked, sched.speed
	res.LagP90Ms, res.LagMaxMs = quantile(sched.lagsMs, 0.9), quantile(sched.lagsMs, 1)
	res.Transitions = transitions
	if d, err := api.dashboard(ctx); err == nil {
		res.Workers = d.Workers
		states := map[string]int{}
		for _, w := range d.Workers {
			res.Violations += w.Violations
			res.Quarantines += w.Quarantines
			st := w.State
			if !w.Healthy {
				st = "unhealthy"
			}
			states[st]++
		}
		res.States = formatStates(states)
	}
	return res, nil
}

func formatStates(states map[string]int) string {
	var parts []string
	for _, s := range []string{"live", "degraded", "quarantined", "unhealthy"} {
		if states[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", states[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// waitRecovered waits (at most max) until every worker is live and healthy.
func waitRecovered(ctx context.Context, api *client, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		d, err := api.dashboard(ctx)
		if err == nil {
			all := true
			for _, w := range d.Workers {
				all = all && w.Healthy && w.State == "live"
			}
			if all {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Transition is a worker's state or health as it changed during a run.
type Transition struct {
	At       time.Duration // since the run started
	WorkerID uint64
	State    string
	Healthy  bool
}

// watchStates logs every change of a worker's state or health, and
// returns the changes of state and health.
func watchStates(ctx context.Context, o Options, api *client, pol proxy.Policy, stop <-chan struct{}) []Transition {
	start := time.Now()
	seen := map[uint64]string{}
	type sh struct {
		state   string
		healthy bool
	}
	last := map[uint64]sh{}
	var out []Transition
	for {
		if d, err := api.dashboard(ctx); err == nil {
			for _, w := range d.Workers {
				if prev, ok := last[w.WorkerID]; !ok || prev != (sh{w.State, w.Healthy}) {
					out = append(out, Transition{At: time.Since(start), WorkerID: w.WorkerID, State: w.State, Healthy: w.Healthy})
					last[w.WorkerID] = sh{w.State, w.Healthy}
				}
				st := w.State
				if !w.Healthy {
					st += ", out of rotation"
				}
				if w.Violations > 0 {
					st += fmt.Sprintf(", %d violations %v", w.Violations, w.ByKind)
				}
				if prev, ok := seen[w.WorkerID]; ok && prev != st {
					msg := fmt.Sprintf("[%s] worker %d: %s", pol, w.WorkerID, st)
					if w.Reason != "" && w.State != "live" {
						msg += " (" + w.Reason + ")"
					}
					logf(o, "%s", msg)
				}
				seen[w.WorkerID] = st
			}
		}
		select {
		case <-stop:
			return out
		case <-ctx.Done():
			return out
		case <-time.After(250 * time.Millisecond):
		}
	}
}

var outMu sync.Mutex

// logf prints one event line (clearing a TTY's status line first).
func logf(o Options, format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	if o.TTY {
		fmt.Fprint(o.Out, "\r\033[K")
	}
	fmt.Fprintf(o.Out, format+"\n", args...)
}

func showProgress(o Options, pol proxy.Policy, p *progress, start time.Time, stop <-chan struct{}) {
	every := 5 * time.Second
	if o.TTY {
		every = 200 * time.Millisecond
	}
	line := func() string {
		return fmt.Sprintf("[%-12s] %4d/%d sent, %4d done, %d failed, hit rate %5.1f%%, %5.1fs",
			pol, p.sent.Load(), len(o.Trace), p.done.Load(), p.failed.Load(), 100*p.hitRate(), time.Since(start).Seconds())
	}
	for {
		select {
		case <-stop:
			outMu.Lock()
			if o.TTY {
				fmt.Fprint(o.Out, "\r\033[K")
			}
			fmt.Fprintln(o.Out, line())
			outMu.Unlock()
			return
		case <-time.After(every):
			outMu.Lock()
			if o.TTY {
				fmt.Fprint(o.Out, "\r\033[K"+line())
			} else {
				fmt.Fprintln(o.Out, line())
			}
			outMu.Unlock()
		}
	}
}

// drained reports whether a worker is out of rotation with nothing in
// flight.
func drained(d proxy.Dashboard, id uint64) bool {
	for _, w := range d.Workers {
		if w.WorkerID == id {
			return !w.Healthy && w.Inflight == 0
		}
	}
	return true
}

// caught reports whether a worker is quarantined or has violations.
func caught(d proxy.Dashboard, id uint64) bool {
	for _, w := range d.Workers {
		if w.WorkerID == id {
			return w.State == "quarantined" || w.Violations > 0
		}
	}
	return false
}

// resetCaches empties every engine's prefix cache (kvmock's
// /reset_prefix_cache, as vLLM's): the engines publish AllBlocksCleared
// and kvrouter's index empties with them.
func (f *fleet) resetCaches(ctx context.Context, hc *http.Client) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range f.engines {
		c := client{base: e.Addrs().BaseURL(), http: hc}
		if err := c.do(ctx, http.MethodPost, "/reset_prefix_cache", nil, nil); err != nil {
			return fmt.Errorf("engine %d: %w", i, err)
		}
	}
	return nil
}
