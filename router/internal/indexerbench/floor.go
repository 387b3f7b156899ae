package indexerbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The floor is what the machine itself adds to a query's latency: an HTTP
// server in a process of its own that does no work (FloorHandler), asked
// by the query client at the indexer's query rate, half an interval
// apart from the indexer's queries, during the same stream. Whatever
// delays its answers (the cores taken by the publishers and the indexer,
// a virtual CPU woken from idle by its host) delays the indexer's too; on
// the shared two-core machine of the README its longest answer in a
// burst was several milliseconds. Its stats are Result.Floor.

// floorAnswer is a /query answer that matches nothing.
const floorAnswer = `{"scores":{}}`

// FloorHandler answers every request at once with an empty /query
// answer, after reading its body as a server does.
func FloorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, floorAnswer)
	})
}

// ServeFloor is the floor process's side: it serves FloorHandler on a
// free loopback port, writes its URL as one line on out, and returns
// when in ends (the harness closes it).
func ServeFloor(in io.Reader, out io.Writer) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("floor server: %w", err)
	}
	srv := &http.Server{Handler: FloorHandler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if _, err := fmt.Fprintln(out, "http://"+l.Addr().String()); err != nil {
		_ = srv.Close()
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	_ = srv.Close()
	if err := <-served; err != http.ErrServerClosed {
		return fmt.Errorf("floor server: %w", err)
	}
	return nil
}

// FloorProcess is a running floor server (ServeFloor in a process of its
// own, started from argv).
type FloorProcess struct {
	URL string
	hp  *helperProcess
}

// StartFloor runs argv as a floor server and returns once it serves.
func StartFloor(argv []string) (*FloorProcess, error) {
	hp, err := startHelper("floor server", argv)
	if err != nil {
		return nil, err
	}
	line, err := hp.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		hp.kill()
		return nil, fmt.Errorf("floor server: said %q: %v", line, err)
	}
	return &FloorProcess{URL: strings.TrimSpace(line), hp: hp}, nil
}

// Stop ends the floor server.
func (f *FloorProcess) Stop() error {
	_ = f.hp.stdin.Close()
	return f.hp.cmd.Wait()
}

// warmUp asks the indexer and the floor (if any) one query each before
// the stream (WarmUp).
func (j queryJob) warmUp(ctx context.Context) error {
	if err := WarmUp(ctx, j.URL, j.Queries[0]); err != nil {
		return err
	}
	if j.FloorURL != "" {
		if err := WarmUp(ctx, j.FloorURL, j.Queries[0]); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
	}
	return nil
}

// drive sends the indexer's queries (DriveQueries) and, when the job has
// a floor, the floor's at the same rate half an interval later, until ctx
// ends.
func (j queryJob) drive(ctx context.Context) queryResult {
	var res queryResult
	if j.FloorURL == "" {
		res.Query = DriveQueries(ctx, j.URL, j.Queries, j.Rate)
		return res
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(float64(time.Second) / j.Rate / 2)):
		}
		// The indexer's own query bodies: the floor reads as many bytes.
		res.Floor = DriveQueries(ctx, j.FloorURL, j.Queries, j.Rate)
	})
	res.Query = DriveQueries(ctx, j.URL, j.Queries, j.Rate)
	wg.Wait()
	return res
}

// IdleFloor asks the floor server alone at rate for d, with no stream
// and no indexer running: what this machine adds to a query's latency
// when nothing else asks for its cores. From queryClient's process when
// it is set (as Run does), else from a goroutine of this one. The
// harness measures it before its first run and after its last; on the
// README's two-core virtual machine its longest answer was above 5 ms in
// some of those windows and not in others.
func IdleFloor(ctx context.Context, floorURL string, queryClient []string, qs []Query, rate float64, d time.Duration) (QueryStats, error) {
	job := queryJob{URL: floorURL, Rate: rate, Queries: qs}
	if len(queryClient) == 0 {
		if err := job.warmUp(ctx); err != nil {
			return QueryStats{}, fmt.Errorf("idle floor: %w", err)
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return job.drive(ctx).Query, nil
	}
	qp, err := startQueryProcess(queryClient, job)
	if err != nil {
		return QueryStats{}, fmt.Errorf("idle floor: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	qr, err := qp.finish()
	if err != nil {
		return QueryStats{}, fmt.Errorf("idle floor: %w", err)
	}
	return qr.Query, nil
}

// IdleFloorLine describes the idle floor windows (IdleFloor) for the
// report, beside the targets.
func IdleFloorLine(windows []QueryStats, d time.Duration) string {
	parts := make([]string, len(windows))
	for i, w := range windows {
		parts[i] = fmt.Sprintf("longest %.1f ms, p99 %.2f ms", ms(w.Max), ms(w.P99))
	}
	return fmt.Sprintf("the floor server alone, nothing else running (%d windows of %s at the query rate, before the first run and after the last): %s",
		len(windows), d, strings.Join(parts, "; "))
}
