package indexerbench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RunConfig is one run's settings.
type RunConfig struct {
	// Rate is stored blocks/s over all engines; 0 is a burst.
	Rate float64
	// QueryRate is /query calls per second while the stream comes in.
	QueryRate float64
	// Queries are the prepared calls, sent round-robin, then each checked
	// against the whole stream once the index holds it.
	Queries []Query
	// PollInterval is how often the sentinel is asked for.
	PollInterval time.Duration
	// Timeout bounds the stream's ingestion.
	Timeout time.Duration
	// QueryClient, when set, is the argv of a process that sends the
	// queries (ServeQueryClient; indexerbench query-client), so that the
	// publishers' goroutines do not delay the client's own reads.
	// Empty: a goroutine of this process.
	QueryClient []string
	// FloorURL, when set, is a floor server (FloorHandler) asked at the
	// same rate during the stream: Result.Floor.
	FloorURL string
}

// Result is what one run measured.
type Result struct {
	Target       string
	Ingest       time.Duration // first message sent -> the sentinel seen on every engine
	BlocksPerSec float64       // stored blocks / Ingest
	CPUPerBlock  time.Duration // the target's CPU over Ingest / stored blocks
	PeakRSS      int64         // bytes (VmHWM at the end)
	Query        QueryStats
	Floor        QueryStats // the floor server's answers meanwhile (RunConfig.FloorURL)
	Wrong        int        // verification answers that differ from the stream's
	FirstWrong   string
}

// Run feeds st to t (started, nothing registered) through pubs, querying
// it meanwhile, then checks its answers.
func Run(ctx context.Context, t *Target, pubs *Publishers, st *Stream, cfg RunConfig) (Result, error) {
	res := Result{Target: t.Name}
	if err := t.Register(ctx, pubs.Endpoints(), st.Spec.BlockSize); err != nil {
		return res, err
	}
	subCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := pubs.WaitSubscribed(subCtx)
	cancel()
	if err != nil {
		return res, fmt.Errorf("%s: %w", t.Name, err)
	}
	// A subscription is visible to the PUB side a little before the
	// subscriber's pipe settles; let it.
	time.Sleep(100 * time.Millisecond)

	cpu0, err := t.CPUSeconds()
	if err != nil {
		return res, err
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	queryCtx, stopQueries := context.WithCancel(runCtx)
	queried := make(chan queryResult, 1)
	job := queryJob{URL: t.URL, FloorURL: cfg.FloorURL, Rate: cfg.QueryRate, Queries: cfg.Queries}
	var qproc *queryProcess
	if len(cfg.QueryClient) > 0 {
		qproc, err = startQueryProcess(cfg.QueryClient, job)
		if err != nil {
			stopQueries()
			return res, err
		}
	} else {
		if err := job.warmUp(runCtx); err != nil {
			stopQueries()
			return res, fmt.Errorf("%s: %w", t.Name, err)
		}
		go func() { queried <- job.drive(queryCtx) }()
	}
	start := time.Now()
	published := make(chan error, 1)
	go func() { published <- pubs.Publish(runCtx, st, cfg.Rate) }()
	done, err := WaitComplete(runCtx, t.URL, st.SentinelQuery(), cfg.PollInterval)
	stopQueries()
	if qproc != nil {
		qr, qerr := qproc.finish()
		res.Query, res.Floor = qr.Query, qr.Floor
		err = errors.Join(err, qerr)
	} else {
		qr := <-queried
		res.Query, res.Floor = qr.Query, qr.Floor
	}
	if perr := <-published; err == nil && perr != nil {
		err = perr
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", t.Name, err)
	}
	cpu1, err := t.CPUSeconds()
	if err != nil {
		return res, err
	}
	res.Ingest = done.Sub(start)
	res.BlocksPerSec = float64(st.Stored) / res.Ingest.Seconds()
	res.CPUPerBlock = time.Duration((cpu1 - cpu0) / float64(st.Stored) * float64(time.Second))
	if res.Wrong, res.FirstWrong, err = Verify(ctx, t.URL, cfg.Queries); err != nil {
		return res, fmt.Errorf("%s: %w", t.Name, err)
	}
	if res.PeakRSS, err = t.PeakRSS(); err != nil {
		return res, err
	}
	return res, nil
}
