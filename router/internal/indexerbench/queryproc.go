package indexerbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The query client can run in a process of its own (RunConfig.QueryClient):
// in the harness's process it shares two Ps with the publishers, and in a
// burst those keep every P busy, so Go notices a query's answer on its
// socket only when sysmon polls the network (~10 ms): the client's own
// wait would count as the indexer's latency.

// queryJob is what the harness hands the query process on its stdin.
type queryJob struct {
	URL      string
	FloorURL string // "" for none
	Rate     float64
	Queries  []Query
}

// queryResult is what the query process answers: the indexer's queries'
// stats and the floor's.
type queryResult struct {
	Query, Floor QueryStats
}

// queryClientReady is the line the query process writes once it holds
// its job, has warmed its connection up (WarmUp) and is about to send the
// first query.
const queryClientReady = "ready"

// ServeQueryClient is the query process's side: it reads a job from in,
// says ready on out, sends the queries until in ends (the harness closes
// it when the stream is in), then writes the QueryStats on out.
func ServeQueryClient(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	var job queryJob
	if err := dec.Decode(&job); err != nil {
		return fmt.Errorf("query client: reading the job: %w", err)
	}
	if len(job.Queries) == 0 || job.Rate <= 0 {
		return errors.New("query client: the job has no queries or no rate")
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), in))
		stop()
	}()
	if err := job.warmUp(ctx); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, queryClientReady); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(job.drive(ctx))
}

// queryProcess is a running query client process.
type queryProcess struct{ *helperProcess }

// startQueryProcess runs argv as a query client for the job and returns
// once it is about to send its first query.
func startQueryProcess(argv []string, job queryJob) (*queryProcess, error) {
	hp, err := startHelper("query client", argv)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*queryProcess, error) {
		hp.kill()
		return nil, fmt.Errorf("query client: %w", err)
	}
	if err := json.NewEncoder(hp.stdin).Encode(job); err != nil {
		return fail(err)
	}
	line, err := hp.out.ReadString('\n')
	if err != nil {
		return fail(err)
	}
	if line != queryClientReady+"\n" {
		return fail(fmt.Errorf("said %q, not ready", line))
	}
	return &queryProcess{hp}, nil
}

// finish stops the queries and returns their stats.
func (p *queryProcess) finish() (queryResult, error) {
	var qs queryResult
	err := p.stdin.Close()
	if err == nil {
		err = json.NewDecoder(p.out).Decode(&qs)
	}
	if werr := p.cmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return qs, fmt.Errorf("query client: %w", err)
	}
	return qs, nil
}
